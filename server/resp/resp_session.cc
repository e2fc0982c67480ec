// A RESP connection's I/O (resp_session.h): the TLS handshake, reading and
// parsing commands, coalesced writes, lingering and the timeouts. What a
// command does is in resp_execute.cc.
#include "server/resp/resp_session.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "proto/resp_codec.h"
#include "server/base/log.h"
#include "server/net/conn_check.h"
#include "server/service/id_api.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"

namespace seqd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// The read buffer starts small and doubles, up to kReadBufferBytes, only
// when a command needs more than what is free.
constexpr size_t kInitialReadBytes = 4 * 1024;
constexpr size_t kReadBufferBytes = 64 * 1024;
// Leftover input is moved to the front once less than this is free behind it.
// Larger than the biggest command the limits allow (~8.5 KiB).
constexpr size_t kCompactBelow = 16 * 1024;
// Unsent reply bytes beyond which a connection stops reading (the client is
// not reading its replies).
constexpr size_t kMaxOutputBacklog = 1 << 20;
// How long a connection we are closing may keep sending before we drop it,
// and how much of that we read (so our last reply is not lost to a RST).
constexpr std::chrono::seconds kLingerTime{2};
constexpr size_t kLingerBytes = 1 << 20;
// Keys are at most 255 bytes; 512 leaves room for the INCRBY count and PING.
constexpr resp::RespLimits kLimits{16, 512, 4096};

}  // namespace

RespServer::Impl::Impl(RespServerOptions options_, const Services& services)
    : options(std::move(options_)),
      ids(services.ids),
      metrics(&services.metrics),
      auth(services.auth) {}

RespSession::RespSession(ConnStream&& stream, Strand strand,
                         std::shared_ptr<RespServer::Impl> server)
    : socket_(std::move(stream)),
      strand_(std::move(strand)),
      server_(std::move(server)),
      ids_(server_->ids),
      max_count_(server_->ids.common_max_count()),
      metrics_(server_->metrics),
      timer_(strand_),
      access_(IdentifyBy(server_->auth, {}, "resp", socket_.PeerAddress())) {}

void RespSession::Start(bool reject) {
  net::dispatch(strand_, [self = shared_from_this(), reject] { self->DoHandshake(reject); });
}

void RespSession::Stop() {
  net::post(strand_, [self = shared_from_this()] {
    if (self->closed_ || self->stopping_) return;
    self->stopping_ = true;
    if (self->lingering_) return;
    if (self->replies_.empty() && self->OutEmpty() && !self->read_closed_) return self->Close();
    self->Pump();
  });
}

void RespSession::DoHandshake(bool reject) {
  error_code ec;
  // Plain writes are non-blocking sends (DoWrite); TLS writes are async.
  if (!socket_.is_tls()) socket_.socket().non_blocking(true, ec);
  if (ec) return Close();
  last_activity_ = SteadyClock::now();
  partial_ = socket_.is_tls();
  partial_since_ = last_activity_;
  ArmTimer(NextCheck(last_activity_));
  // Plain TCP: completes at once.
  socket_.AsyncHandshake(
      [self = shared_from_this(), reject](error_code ec) { self->OnHandshake(reject, ec); });
}

void RespSession::OnHandshake(bool reject, error_code ec) {
  if (closed_) return;
  if (ec) {
    SEQD_LOG(kDebug) << "resp: TLS handshake failed: " << ec.message();
    return Close();
  }
  partial_ = false;
  if (reject) {
    resp::AppendError(out_, "max number of clients reached");
    read_closed_ = true;
  }
  Pump();
}

void RespSession::Pump() {
  if (closed_ || lingering_) return;
  if (!read_closed_ && !stopping_) Parse();
  DoWrite();
  if (closed_) return;
  if (read_closed_ || stopping_) {
    if (replies_.empty() && OutEmpty()) Finish();
    return;
  }
  if (!read_waiting_ && need_more_ && replies_.size() < server_->options.max_in_flight &&
      OutBacklog() < kMaxOutputBacklog) {
    DoRead();
  }
}

void RespSession::DoRead() {
  if (in_cap_ == 0) {
    in_ = std::make_unique<char[]>(kInitialReadBytes);
    in_cap_ = kInitialReadBytes;
  }
  if (in_end_ == in_cap_) Compact(/*force=*/true);
  if (in_end_ == in_cap_ && in_cap_ < kReadBufferBytes) {
    // A partial command fills the buffer: grow with what arrived.
    auto bigger = std::make_unique<char[]>(in_cap_ * 2);
    std::memcpy(bigger.get(), in_.get(), in_end_);
    in_ = std::move(bigger);
    in_cap_ *= 2;
  }
  // Cannot happen: the parser rejects a command long before it fills the
  // buffer. A zero-sized read would complete at once, forever.
  if (in_end_ == in_cap_) return Close();
  read_waiting_ = true;
  socket_.async_read_some(
      net::buffer(in_.get() + in_end_, in_cap_ - in_end_),
      [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
}

void RespSession::OnRead(error_code ec, size_t n) {
  read_waiting_ = false;
  if (closed_) return;
  if (lingering_) {
    discarded_ += n;
    if (ec || discarded_ > kLingerBytes) return Close();
    in_begin_ = in_end_ = 0;
    return DoRead();
  }
  if (ec) {
    if (ec != net::error::eof) return Close();  // reset: nobody to answer
    // The client is done sending: answer what it sent, then close.
    peer_eof_ = true;
    read_closed_ = true;
    return Pump();
  }
  in_end_ += n;
  last_activity_ = SteadyClock::now();
  read_at_ = last_activity_;
  Pump();
}

void RespSession::Parse() {
  const size_t max_in_flight = server_->options.max_in_flight;
  need_more_ = false;
  while (!read_closed_) {
    if (replies_.size() >= max_in_flight || OutBacklog() >= kMaxOutputBacklog) break;
    const std::string_view input(in_.get() + in_begin_, in_end_ - in_begin_);
    resp::ParseResult r = resp::ParseCommand(input, kLimits, &args_);
    if (r.state == resp::ParseState::kNeedMore) {
      need_more_ = true;
      // A command has begun: it must be whole within request_timeout.
      if (!input.empty() && !partial_) {
        partial_ = true;
        partial_since_ = read_at_;
      }
      break;
    }
    if (r.state == resp::ParseState::kError) {
      RejectProtocolError(r.error);
      break;
    }
    in_begin_ += r.consumed;
    partial_ = false;
    if (!args_.empty()) Execute();
  }
  CloseRun();  // before Compact(): the run's key points into the buffer
  Compact(/*force=*/false);
}

void RespSession::Compact(bool force) {
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
  } else if (in_begin_ > 0 && (force || in_cap_ - in_end_ < kCompactBelow)) {
    std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
}

// Replies appended while a write waits go out with the rest.
void RespSession::DoWrite() {
  if (write_waiting_ || closed_) return;
  if (socket_.is_tls()) return DoWriteTls();
  while (out_sent_ < out_.size()) {
    error_code ec;
    const size_t n = socket_.socket().write_some(
        net::buffer(out_.data() + out_sent_, out_.size() - out_sent_), ec);
    if (ec == net::error::would_block || ec == net::error::try_again) {
      write_waiting_ = true;
      write_wait_since_ = SteadyClock::now();
      socket_.socket().async_wait(
          tcp::socket::wait_write,
          [self = shared_from_this()](error_code wec) { self->OnWritable(wec); });
      return;
    }
    if (ec) return Close();  // the peer is gone
    out_sent_ += n;
  }
  out_.clear();
  out_sent_ = 0;
}

void RespSession::OnWritable(error_code ec) {
  write_waiting_ = false;
  if (closed_) return;
  if (ec) return Close();
  last_activity_ = SteadyClock::now();  // the client reads
  Pump();
}

// The TLS layer cannot take partial non-blocking writes: replies appended
// while a write is under way wait in out_ for the next.
void RespSession::DoWriteTls() {
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
    return;
  }
  write_waiting_ = true;
  write_wait_since_ = SteadyClock::now();
  wbuf_.assign(out_, out_sent_);
  out_.clear();
  out_sent_ = 0;
  net::async_write(socket_, net::buffer(wbuf_),
                   [self = shared_from_this()](error_code ec, size_t) { self->OnWriteTls(ec); });
}

void RespSession::OnWriteTls(error_code ec) {
  write_waiting_ = false;
  wbuf_.clear();
  if (closed_) return;
  if (ec) return Close();
  last_activity_ = SteadyClock::now();  // the client reads
  Pump();
}

void RespSession::Finish() {
  if (peer_eof_) return Close();
  Linger();
}

// Half-closes, then discards what the client still sends until it closes,
// the linger time passes or too much arrives. Closing with unread input
// would reset the connection and could destroy our last reply.
void RespSession::Linger() {
  lingering_ = true;
  socket_.ShutdownSend();
  linger_deadline_ = SteadyClock::now() +
                     std::min<SteadyClock::duration>(kLingerTime, server_->options.idle_timeout);
  ArmTimer(linger_deadline_);
  in_begin_ = in_end_ = 0;
  if (!read_waiting_) DoRead();
}

void RespSession::Close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  socket_.Close();
}

// The idle check runs only when the timer fires; reads (and writes that
// had to wait) just stamp last_activity_, so the hot path never touches
// the timer.
void RespSession::ArmTimer(SteadyClock::time_point when) {
  timer_.expires_at(when);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->OnTimer();
  });
}

void RespSession::OnTimer() {
  if (closed_) return;
  const SteadyClock::time_point now = SteadyClock::now();
  if (lingering_) {
    if (now >= linger_deadline_) return Close();
    return ArmTimer(linger_deadline_);
  }
  const auto& o = server_->options;
  if (write_waiting_ && o.write_timeout.count() > 0 && now - write_wait_since_ >= o.write_timeout) {
    SEQD_LOG(kDebug) << "resp: closing a connection that does not read its replies";
    metrics_->WriteTimedOut(Interface::kResp);
    return Close();
  }
  if (partial_ && o.request_timeout.count() > 0 && now - partial_since_ >= o.request_timeout) {
    SEQD_LOG(kDebug) << "resp: closing a connection whose command did not arrive in time";
    return Close();
  }
  // Unsent output does not keep a connection open: a client that neither
  // sends nor reads for idle_timeout is gone or stuck.
  if (replies_.empty() && o.idle_timeout.count() > 0 && now - last_activity_ >= o.idle_timeout) {
    return Close();
  }
  ArmTimer(NextCheck(now));
}

// conn_check.h: the command and write deadlines exact.
RespSession::SteadyClock::time_point RespSession::NextCheck(SteadyClock::time_point now) const {
  const auto& o = server_->options;
  ConnCheckState state{now, last_activity_, !replies_.empty(), {}, {}};
  if (partial_) state.frame_since = partial_since_;
  if (write_waiting_) state.write_since = write_wait_since_;
  return NextConnCheck({o.idle_timeout, o.request_timeout, o.write_timeout}, state);
}

}  // namespace seqd
