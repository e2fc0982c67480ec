// The RESP connections: reading and parsing commands, the ordered reply
// queue (slots), INCR runs and INCRBY takes at the allocator, writing,
// lingering and the idle timeout. What each command means is decided in
// resp_commands.cc. Over 400 lines because one connection's state machine is
// one class: the slot ring, the open INCR run and the outstanding takes
// share invariants best read together.
#include "server/resp/resp_server.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "proto/resp_codec.h"
#include "server/auth/access.h"
#include "server/base/log.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "server/net/conn_stream.h"
#include "server/net/tcp_listener.h"
#include "server/net/tls_context.h"
#include "server/resp/resp_commands.h"
#include "server/route/key_router.h"
#include "server/service/services.h"

namespace seqd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;
using Strand = TcpListener::Strand;

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
// Failed AUTHs after which a connection is closed.
constexpr int kMaxFailedAuths = 3;
// How long a connection we are closing may keep sending before we drop it,
// and how much of that we read (so our last reply is not lost to a RST).
constexpr std::chrono::seconds kLingerTime{2};
constexpr size_t kLingerBytes = 1 << 20;
// INCRBY: blocks taken before giving up on a contiguous one.
constexpr int kIncrByAttempts = 4;
// Keys are at most 128 bytes; 512 leaves room for the INCRBY count and PING.
constexpr resp::RespLimits kLimits{16, 512, 4096};
}  // namespace

struct RespServer::Impl {
  Impl(RespServerOptions options_, const Services& services)
      : options(std::move(options_)),
        allocator(services.ids),
        router(services.router),
        metrics(&services.metrics),
        auth(services.auth) {}

  const RespServerOptions options;
  SegmentAllocator& allocator;  // for its options
  KeyRouter& router;
  Metrics* const metrics;                 // never null
  const Authenticator* const auth;        // null: open
  std::shared_ptr<TcpListener> listener;  // set once, by the constructor
};

namespace {

// One reply position in a connection's ordered reply queue.
struct Slot {
  enum class State : uint8_t { kPending, kInteger, kText };
  State state = State::kPending;
  bool incrby = false;                // pending: head of an INCRBY (else of an INCR run)
  uint8_t attempts = 0;               // INCRBY blocks taken so far
  int64_t count = 0;                  // pending head: INCR run length or INCRBY's n
  int64_t value = 0;                  // kInteger
  std::string text;                   // kText: the encoded reply; pending INCRBY: the key
  SteadyClock::time_point read_at{};  // pending head, with metrics: its input's read

  void Reset() {
    state = State::kPending;
    incrby = false;
    attempts = 0;
    count = 0;
    text.clear();
  }
};

// One connection. Every member is touched only on the connection's strand.
//
// Flow: a read lands in `in_`; Parse() decodes every complete command and
// queues one Slot per command (a reply, or pending on an allocator call);
// filled slots at the head of the queue move to `out_`, which Flush() writes
// with non-blocking sends (waiting for writability only when the socket
// buffer is full). Take callbacks capture a raw Session* and a slot number;
// `self_` keeps the session alive while any is outstanding.
class Session : public ListenedSession, public std::enable_shared_from_this<Session> {
 public:
  Session(ConnStream&& stream, Strand strand, std::shared_ptr<RespServer::Impl> server)
      : socket_(std::move(stream)),
        strand_(std::move(strand)),
        server_(std::move(server)),
        router_(server_->router),
        max_count_(server_->allocator.options().max_count),
        metrics_(server_->metrics),
        timer_(strand_),
        access_(IdentifyBy(server_->auth, {}, "resp", socket_.PeerAddress())) {}

  // Starts serving; with `reject`, answers an error and closes instead.
  // With TLS the handshake comes first; it must finish within the request
  // timeout, like a command.
  void Start(bool reject) override {
    net::dispatch(strand_, [self = shared_from_this(), reject] {
      error_code ec;
      // Plain writes are non-blocking sends (Flush); TLS writes are async.
      if (!self->socket_.is_tls()) self->socket_.socket().non_blocking(true, ec);
      if (ec) return self->Close();
      self->last_activity_ = SteadyClock::now();
      self->partial_ = self->socket_.is_tls();
      self->partial_since_ = self->last_activity_;
      self->ArmTimer(self->NextCheck(self->last_activity_));
      self->socket_.AsyncHandshake([self, reject](error_code hec) {
        if (self->closed_) return;
        if (hec) {
          SEQD_LOG(kDebug) << "resp: TLS handshake failed: " << hec.message();
          return self->Close();
        }
        self->partial_ = false;
        if (reject) {
          resp::AppendError(self->out_, "max number of clients reached");
          self->read_closed_ = true;
        }
        self->Pump();
      });
    });
  }

  // Server shutdown: close now if idle, else once the commands already read
  // are answered.
  void Stop() override {
    net::post(strand_, [self = shared_from_this()] {
      if (self->closed_ || self->stopping_) return;
      self->stopping_ = true;
      if (self->lingering_) return;
      if (self->ring_count_ == 0 && self->OutEmpty() && !self->read_closed_) return self->Close();
      self->Pump();
    });
  }

 private:
  bool OutEmpty() const { return out_sent_ == out_.size() && wbuf_.empty(); }
  size_t OutBacklog() const { return out_.size() - out_sent_ + wbuf_.size(); }

  // Moves the connection forward after any event: parse what was read,
  // write what is ready, then read more, finish or wait.
  void Pump() {
    if (closed_ || lingering_) return;
    if (!read_closed_ && !stopping_) Parse();
    Flush();
    if (closed_) return;
    if (read_closed_ || stopping_) {
      if (ring_count_ == 0 && OutEmpty()) Finish();
      return;
    }
    if (!read_waiting_ && need_more_ && ring_count_ < server_->options.max_in_flight &&
        OutBacklog() < kMaxOutputBacklog) {
      StartRead();
    }
  }

  void StartRead() {
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

  void OnRead(error_code ec, size_t n) {
    read_waiting_ = false;
    if (closed_) return;
    if (lingering_) {
      discarded_ += n;
      if (ec || discarded_ > kLingerBytes) return Close();
      in_begin_ = in_end_ = 0;
      return StartRead();
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

  // Decodes and starts every complete command in the buffer, unless too
  // many are unanswered or the client is not reading its replies.
  void Parse() {
    const size_t max_in_flight = server_->options.max_in_flight;
    need_more_ = false;
    while (!read_closed_) {
      if (ring_count_ >= max_in_flight || OutBacklog() >= kMaxOutputBacklog) break;
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
        CloseRun();
        Counted(RespOp::kOther, ErrorCode::kInvalidArgument);
        Reply(EncodedError("Protocol error: " + r.error));
        read_closed_ = true;  // the stream cannot be resynchronized
        break;
      }
      in_begin_ += r.consumed;
      partial_ = false;
      if (!args_.empty()) Execute();
    }
    CloseRun();  // before Compact(): the run's key points into the buffer
    Compact(/*force=*/false);
  }

  void Compact(bool force) {
    if (in_begin_ == in_end_) {
      in_begin_ = in_end_ = 0;
    } else if (in_begin_ > 0 && (force || in_cap_ - in_end_ < kCompactBelow)) {
      std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
      in_end_ -= in_begin_;
      in_begin_ = 0;
    }
  }

  void Execute() {
    RespAction a = DecideRespCommand(args_, max_count_);
    if (a.ends_run) CloseRun();  // everything else is ordered after the INCRs before it
    if (a.looks_like_http) {
      Counted(a.op, a.code);
      SEQD_LOG(kWarn) << "resp: closing a connection from " << access_.peer()
                      << " that sent an HTTP request (cross-protocol attack or wrong port)";
      read_closed_ = true;
      return Close();
    }
    if (a.kind == RespAction::Kind::kAuth) return Auth(a);
    if (a.needs_auth) {
      access_.Revalidate(server_->auth);  // a reload may have revoked the token
      if (!access_.principal()) {
        access_.AuditUnauthenticated(RespOpName(a.op));
        CloseRun();
        return Reply(a.op, ErrorCode::kUnauthenticated, kNoAuthReply);
      }
    }
    switch (a.kind) {
      case RespAction::Kind::kAuth:
        return;  // handled above
      case RespAction::Kind::kIncr:
      case RespAction::Kind::kIncrBy:
        if (Status s = access_.Check(Permission::kIds, a.key, RespOpName(a.op)); !s) {
          CloseRun();
          return Reply(a.op, ErrorCode::kPermissionDenied, NoPermReply(s.error().message));
        }
        if (a.kind == RespAction::Kind::kIncr) return Incr(a.key);
        return IncrBy(a.key, a.count);
      case RespAction::Kind::kReply:
        Reply(a.op, a.code, a.reply);
        if (a.close) read_closed_ = true;
        return;
    }
  }

  // AUTH [user] secret: a user other than "default" must be the token's id.
  void Auth(const RespAction& a) {
    Access next = IdentifyBy(server_->auth, a.key, "resp", access_.peer());
    const Principal* who = next.principal();
    if (!who || (!a.user.empty() && a.user != "default" && !who->open && a.user != who->id)) {
      Reply(RespOp::kOther, ErrorCode::kUnauthenticated, kWrongPassReply);
      // Guessing secrets costs a connection every few tries.
      if (++failed_auths_ >= kMaxFailedAuths) read_closed_ = true;
      return;
    }
    access_ = std::move(next);
    Reply(RespOp::kOther, kOk, "+OK\r\n");
  }

  // --- metrics ---------------------------------------------------------------

  static constexpr std::optional<ErrorCode> kOk = std::nullopt;

  // One command answered now: counted, and its time since the read observed.
  void Counted(RespOp op, std::optional<ErrorCode> code) {
    metrics_->CountRequest(Interface::kResp, RespOpName(op), code ? ErrorCodeName(*code) : "ok",
                           Metrics::Since(read_at_));
  }

  // `n` commands answered by one allocator call (an INCR run, or one INCRBY
  // with n = 1): one counter add and one duration observation.
  void CountedTake(RespOp op, const Slot& head, int64_t n, std::optional<ErrorCode> code) {
    metrics_->CountRequest(Interface::kResp, RespOpName(op), code ? ErrorCodeName(*code) : "ok",
                           Metrics::Since(head.read_at), n);
  }

  void Reply(RespOp op, std::optional<ErrorCode> code, std::string_view encoded) {
    Counted(op, code);
    Reply(encoded);
  }

  // Consecutive INCRs of one key are collected into a run and served by a
  // single Take when the run ends (CloseRun).
  void Incr(std::string_view key) {
    if (run_open_ && run_count_ < max_count_ && key == run_key_) {
      PushSlot();
      ++run_count_;
      return;
    }
    CloseRun();
    run_open_ = true;
    run_key_ = key;
    run_seq_ = PushSlot();
    run_count_ = 1;
  }

  void CloseRun() {
    if (!run_open_) return;
    run_open_ = false;
    Slot& head = SlotAt(run_seq_);
    head.count = run_count_;
    if (metrics_) head.read_at = read_at_;
    StartTake(run_key_, run_count_, run_seq_);
  }

  void IncrBy(std::string_view key, int64_t n) {
    const uint64_t seq = PushSlot();
    Slot& s = SlotAt(seq);
    s.incrby = true;
    s.count = n;
    if (metrics_) s.read_at = read_at_;
    s.text.assign(key);
    StartTake(key, n, seq);
  }

  void StartTake(std::string_view key, int64_t count, uint64_t seq) {
    if (outstanding_++ == 0) self_ = shared_from_this();
    // 16 bytes of trivially copyable capture: std::function stores it inline.
    router_.Take(
        key, count, Hop::kMayForward,
        [s = this, seq](Result<IdBatch> r) { s->OnTaken(seq, std::move(r)); }, access_.token_id());
  }

  // Any thread. On the fast path the allocator answers inline, still on our
  // strand, from inside Parse().
  void OnTaken(uint64_t seq, Result<IdBatch> r) {
    if (strand_.running_in_this_thread()) return Complete(seq, std::move(r));
    // `self_` keeps us alive until Complete() has run.
    net::post(strand_, [self = shared_from_this(), seq, r = std::move(r)]() mutable {
      self->Complete(seq, std::move(r));
      self->Pump();
    });
  }

  void Complete(uint64_t seq, Result<IdBatch> r) {
    Slot& head = SlotAt(seq);
    if (head.incrby) {
      if (r && r->ranges.size() != 1 && !closed_ && ++head.attempts < kIncrByAttempts) {
        // The block spans two segments that are not adjacent: drop it and
        // take another, which comes from the newer segment.
        const std::string key = head.text;
        router_.Take(
            key, head.count, Hop::kMayForward,
            [s = this, seq](Result<IdBatch> r2) { s->OnTaken(seq, std::move(r2)); },
            access_.token_id());
        return;  // still outstanding
      }
      if (!r) {
        CountedTake(RespOp::kIncrBy, head, 1, r.error().code);
        head.text = TakeErrorReply(r.error());
        head.state = Slot::State::kText;
      } else if (r->ranges.size() == 1) {
        CountedTake(RespOp::kIncrBy, head, 1, kOk);
        head.value = r->ranges[0].last;
        head.state = Slot::State::kInteger;
      } else {
        CountedTake(RespOp::kIncrBy, head, 1, ErrorCode::kFailedPrecondition);
        head.text = NotContiguousReply(head.count);
        head.state = Slot::State::kText;
      }
    } else if (r) {
      CountedTake(RespOp::kIncr, head, head.count, kOk);
      uint64_t k = seq;
      for (const IdRange& range : r->ranges) {
        for (int64_t id = range.first; id <= range.last; ++id) {
          Slot& s = SlotAt(k++);
          s.value = id;
          s.state = Slot::State::kInteger;
        }
      }
    } else {
      CountedTake(RespOp::kIncr, head, head.count, r.error().code);
      const std::string text = TakeErrorReply(r.error());
      const uint64_t end = seq + static_cast<uint64_t>(head.count);
      for (uint64_t k = seq; k < end; ++k) {
        Slot& s = SlotAt(k);
        s.text = text;
        s.state = Slot::State::kText;
      }
    }
    std::shared_ptr<Session> keep;  // our callers hold their own reference
    if (--outstanding_ == 0) keep = std::move(self_);
    if (!closed_) DrainReady();
  }

  // Moves the filled slots at the head of the queue into the output.
  void DrainReady() {
    while (ring_count_ > 0) {
      Slot& s = SlotAt(head_seq_);
      if (s.state == Slot::State::kPending) break;
      if (s.state == Slot::State::kInteger) {
        resp::AppendInteger(out_, s.value);
      } else {
        out_.append(s.text);
      }
      s.Reset();
      ++head_seq_;
      --ring_count_;
    }
  }

  // A reply known now: straight to the output unless earlier ones wait.
  void Reply(std::string_view encoded) {
    if (ring_count_ == 0) {
      out_.append(encoded);
      return;
    }
    Slot& s = SlotAt(PushSlot());
    s.text.assign(encoded);
    s.state = Slot::State::kText;
  }

  uint64_t PushSlot() {
    if (ring_count_ == ring_.size()) Grow();
    return head_seq_ + ring_count_++;
  }

  Slot& SlotAt(uint64_t seq) { return ring_[seq & (ring_.size() - 1)]; }

  void Grow() {
    std::vector<Slot> bigger(std::max<size_t>(16, ring_.size() * 2));
    for (size_t i = 0; i < ring_count_; ++i) {
      const uint64_t seq = head_seq_ + i;
      bigger[seq & (bigger.size() - 1)] = std::move(SlotAt(seq));
    }
    ring_.swap(bigger);
  }

  // Writes as much output as the socket takes now, without blocking; waits
  // for writability only if the socket buffer is full. Replies appended
  // meanwhile go out with the rest.
  void Flush() {
    if (write_waiting_ || closed_) return;
    if (socket_.is_tls()) return FlushTls();
    while (out_sent_ < out_.size()) {
      error_code ec;
      const size_t n = socket_.socket().write_some(
          net::buffer(out_.data() + out_sent_, out_.size() - out_sent_), ec);
      if (ec == net::error::would_block || ec == net::error::try_again) {
        write_waiting_ = true;
        write_wait_since_ = SteadyClock::now();
        socket_.socket().async_wait(
            tcp::socket::wait_write, [self = shared_from_this()](error_code wec) {
              self->write_waiting_ = false;
              if (self->closed_) return;
              if (wec) return self->Close();
              self->last_activity_ = SteadyClock::now();  // the client reads
              self->Pump();
            });
        return;
      }
      if (ec) return Close();  // the peer is gone
      out_sent_ += n;
    }
    out_.clear();
    out_sent_ = 0;
  }

  // TLS: the output so far goes out in one async write (the TLS layer
  // cannot take partial non-blocking writes); replies appended meanwhile
  // wait in out_ for the next.
  void FlushTls() {
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
                     [self = shared_from_this()](error_code ec, size_t) {
                       self->write_waiting_ = false;
                       self->wbuf_.clear();
                       if (self->closed_) return;
                       if (ec) return self->Close();
                       self->last_activity_ = SteadyClock::now();  // the client reads
                       self->Pump();
                     });
  }

  // Everything answered and written; the connection ends.
  void Finish() {
    if (peer_eof_) return Close();
    Linger();
  }

  // Half-closes, then discards what the client still sends until it closes,
  // the linger time passes or too much arrives. Closing with unread input
  // would reset the connection and could destroy our last reply.
  void Linger() {
    lingering_ = true;
    socket_.ShutdownSend();
    linger_deadline_ = SteadyClock::now() +
                       std::min<SteadyClock::duration>(kLingerTime, server_->options.idle_timeout);
    ArmTimer(linger_deadline_);
    in_begin_ = in_end_ = 0;
    if (!read_waiting_) StartRead();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    socket_.Close();
  }

  // The idle check runs only when the timer fires; reads (and writes that
  // had to wait) just stamp last_activity_, so the hot path never touches
  // the timer.
  void ArmTimer(SteadyClock::time_point when) {
    timer_.expires_at(when);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->OnTimer();
    });
  }

  void OnTimer() {
    if (closed_) return;
    const SteadyClock::time_point now = SteadyClock::now();
    if (lingering_) {
      if (now >= linger_deadline_) return Close();
      return ArmTimer(linger_deadline_);
    }
    const auto& o = server_->options;
    if (write_waiting_ && o.write_timeout.count() > 0 &&
        now - write_wait_since_ >= o.write_timeout) {
      SEQD_LOG(kDebug) << "resp: closing a connection that does not read its replies";
      return Close();
    }
    if (partial_ && o.request_timeout.count() > 0 && now - partial_since_ >= o.request_timeout) {
      SEQD_LOG(kDebug) << "resp: closing a connection whose command did not arrive in time";
      return Close();
    }
    // Unsent output does not keep a connection open: a client that neither
    // sends nor reads for idle_timeout is gone or stuck.
    if (ring_count_ == 0 && o.idle_timeout.count() > 0 && now - last_activity_ >= o.idle_timeout) {
      return Close();
    }
    ArmTimer(NextCheck(now));
  }

  // When OnTimer looks again: the idle deadline (or one idle period while
  // commands are in flight), and at least every half of the shorter of the
  // command and write timeouts (those start without touching the timer, so
  // they close within 1.5 times their timeout).
  SteadyClock::time_point NextCheck(SteadyClock::time_point now) const {
    const auto& o = server_->options;
    SteadyClock::time_point next = now + std::chrono::hours(24);
    if (o.idle_timeout.count() > 0) {
      next = ring_count_ > 0 ? now + o.idle_timeout : last_activity_ + o.idle_timeout;
    }
    for (std::chrono::seconds t : {o.request_timeout, o.write_timeout}) {
      if (t.count() > 0) next = std::min<SteadyClock::time_point>(next, now + t / 2);
    }
    return std::max<SteadyClock::time_point>(next, now + std::chrono::milliseconds(1));
  }

  ConnStream socket_;  // TCP, or TLS over it
  const Strand strand_;
  const std::shared_ptr<RespServer::Impl> server_;
  KeyRouter& router_;
  const int64_t max_count_;
  Metrics* const metrics_;   // null without options.metrics
  net::steady_timer timer_;  // idle timeout, then linger deadline

  // Input: bytes [in_begin_, in_end_) are read but not yet parsed.
  std::unique_ptr<char[]> in_;  // allocated by the first read
  size_t in_cap_ = 0;
  size_t in_begin_ = 0, in_end_ = 0;
  bool partial_ = false;                     // a command has begun and is not whole yet
  SteadyClock::time_point partial_since_{};  // the read its first bytes came in
  SteadyClock::time_point write_wait_since_{};
  std::vector<std::string_view> args_;  // the command being executed
  bool need_more_ = true;               // Parse() stopped for lack of input

  // Replies in request order: slot `seq` lives at ring_[seq & (size - 1)];
  // [head_seq_, head_seq_ + ring_count_) are unanswered or unflushed.
  std::vector<Slot> ring_;
  uint64_t head_seq_ = 0;
  size_t ring_count_ = 0;

  // The INCR run being collected by Parse().
  bool run_open_ = false;
  std::string_view run_key_;  // points into in_
  uint64_t run_seq_ = 0;
  int64_t run_count_ = 0;

  // Output: bytes [out_sent_, size) are not yet written.
  std::string out_;
  size_t out_sent_ = 0;
  std::string wbuf_;  // TLS: the output being written

  int outstanding_ = 0;            // Take calls not yet completed
  std::shared_ptr<Session> self_;  // set while outstanding_ > 0

  SteadyClock::time_point last_activity_{};
  SteadyClock::time_point read_at_{};  // of the last read: the commands' start
  SteadyClock::time_point linger_deadline_{};
  size_t discarded_ = 0;
  bool read_waiting_ = false;   // an async_read_some is in flight
  bool write_waiting_ = false;  // waiting for the socket to take more output
  bool read_closed_ = false;    // no more commands: EOF, QUIT, protocol error, rejected
  bool peer_eof_ = false;       // the client shut down its sending side
  Access access_;               // the connection's token; replaced by each AUTH
  int failed_auths_ = 0;
  bool stopping_ = false;  // server shutdown
  bool lingering_ = false;
  bool closed_ = false;
};

}  // namespace

RespServer::RespServer(net::io_context& io, RespServerOptions options, const Services& services)
    : impl_(std::make_shared<Impl>(std::move(options), services)) {
  const RespServerOptions& o = impl_->options;
  impl_->listener = MakeTcpListener(
      io,
      {"resp", o.address, o.port, o.max_connections, o.max_connections_per_peer,
       /*sessions_reject=*/true},
      impl_, [](TcpListener::Socket socket, std::shared_ptr<Impl> impl) {
        Strand strand = socket.get_executor();
        const auto& tls = impl->options.tls;
        ConnStream stream(std::move(socket), tls ? tls->Current() : nullptr);
        return std::make_shared<Session>(std::move(stream), std::move(strand), std::move(impl));
      });
}

RespServer::~RespServer() { impl_->listener->CloseAcceptor(); }

Status RespServer::Listen() { return impl_->listener->Listen(); }

uint16_t RespServer::port() const { return impl_->listener->port(); }

size_t RespServer::open_connections() const { return impl_->listener->open_connections(); }

void RespServer::Stop(std::function<void()> drained) { impl_->listener->Stop(std::move(drained)); }

}  // namespace seqd
