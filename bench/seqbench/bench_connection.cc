// seqbench's load connection (bench_connection.h): connecting (and the TLS
// handshake), the two send loops (Fill: closed loop, --pipeline requests in
// flight; SendDue: open loop, --rate on BenchPacer's grid), writing, reading,
// and reconnecting after a failure.
#include "bench_connection.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "pace_grid.h"
#include "proto/binary_codec.h"
#include "resp_wire.h"
#include "tls_client.h"

namespace seqd::bench {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

BenchConnection::BenchConnection(asio::io_context& io, const Config& cfg,
                                 tcp::resolver::results_type endpoints,
                                 const std::atomic<bool>& stop,
                                 std::shared_ptr<asio::ssl::context> tls_context)
    : strand_(asio::make_strand(io)),
      socket_(strand_),
      tls_context_(std::move(tls_context)),
      retry_timer_(strand_),
      cfg_(cfg),
      endpoints_(std::move(endpoints)),
      stop_(stop) {
  if (cfg_.http) {
    http_request_ = HttpRequestFor(cfg_.key);
  } else if (cfg_.resp) {
    http_request_ = RespRequestFor(cfg_.key);
  }
}

void BenchConnection::Start() {
  asio::post(strand_, [self = shared_from_this()] { self->Connect(); });
}

void BenchConnection::Stop() {
  asio::post(strand_, [self = shared_from_this()] {
    boost::system::error_code ignored;
    self->socket_.close(ignored);
    self->retry_timer_.cancel();
    self->stats_.unanswered = self->in_flight_;  // sent, not answered by the end
  });
}

void BenchConnection::Connect() {
  if (stop_) return;
  asio::async_connect(
      socket_, endpoints_,
      [self = shared_from_this()](const boost::system::error_code& ec, const tcp::endpoint&) {
        if (self->stop_) return;
        if (ec) return self->Fail("connect: " + ec.message());
        self->socket_.set_option(tcp::no_delay(true));
        if (self->tls_context_) return self->Handshake();
        self->Started();
      });
}

// A fresh TLS stream per connection (an SSL object is not reused); the
// handlers of its operations keep it alive past a Fail.
void BenchConnection::Handshake() {
  tls_ = std::make_shared<asio::ssl::stream<tcp::socket&>>(socket_, *tls_context_);
  std::string error;
  const std::string& name = cfg_.tls.server_name.empty() ? cfg_.host : cfg_.tls.server_name;
  if (!seqd::client::detail::SetTlsPeerName(tls_->native_handle(), name, error)) {
    return Fail(error);
  }
  tls_->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this(), tls = tls_](
                                                            const boost::system::error_code& ec) {
    if (self->stop_ || tls != self->tls_) return;
    if (ec) {
      return self->Fail("tls handshake: " +
                        seqd::client::detail::TlsFailureReason(tls->native_handle(), ec));
    }
    self->Started();
  });
}

void BenchConnection::Started() {
  connected_ = true;
  resp_auth_pending_ = false;
  if (cfg_.resp && !cfg_.token.empty()) {
    seqd::tools::AppendRespCommand(out_, {"AUTH", cfg_.token});
    resp_auth_pending_ = true;  // the first reply is AUTH's
  } else if (!cfg_.http && !cfg_.token.empty()) {
    seqd::proto::AppendFrame(out_, seqd::proto::Opcode::kAuth, 0, kAuthRequestId, cfg_.token);
  }
  if (cfg_.rate > 0) {
    if (!pacing_) {  // the grid point after connecting; a reconnect sends what came due
      pacing_ = true;
      const PaceGrid grid = PaceGrid::For(cfg_.rate, cfg_.connections);
      pace_interval_ = grid.interval;
      next_due_ = grid.NextAtOrAfter(cfg_.start, std::max(Clock::now(), cfg_.start));
    }
  } else {
    Fill();
  }
  Read();
}

void BenchConnection::Due(Clock::time_point now) {
  asio::post(strand_, [self = shared_from_this(), now] { self->SendDue(now); });
}

// Open loop: sends every request whose scheduled time has come, stamped
// with that time (a late request keeps its stamp: the wait is its latency).
void BenchConnection::SendDue(Clock::time_point now) {
  if (stop_ || !connected_ || !pacing_) return;
  while (next_due_ <= now && !QuotaSent()) {
    Append(next_due_);
    next_due_ += pace_interval_;
  }
  Write();
}

void BenchConnection::Fail(const std::string& what) {
  if (stop_) return;
  stats_.Error(what);
  cfg_.finished->fetch_add(in_flight_, std::memory_order_relaxed);  // never answered
  connected_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  sent_.clear();
  sent_order_.clear();
  in_flight_ = 0;
  out_.clear();
  in_.clear();
  ++generation_;
  retry_timer_.expires_after(std::chrono::milliseconds(100));
  retry_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->Connect();
  });
}

void BenchConnection::Fill() {
  const Clock::time_point now = Clock::now();
  while (in_flight_ < cfg_.pipeline && !stop_ && !QuotaSent()) Append(now);
  Write();
}

void BenchConnection::Write() {
  if (writing_ || out_.empty() || !connected_) return;
  writing_ = true;
  wbuf_.swap(out_);
  out_.clear();
  auto on_written = [self = shared_from_this(), gen = generation_](
                        const boost::system::error_code& ec, size_t) {
    self->writing_ = false;
    self->wbuf_.clear();
    // A write of a failed connection: flush the new one's requests.
    if (gen != self->generation_) return self->Write();
    if (ec) return self->Fail("write: " + ec.message());
    self->Write();
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(wbuf_),
                      [tls = tls_, on_written = std::move(on_written)](
                          const boost::system::error_code& ec, size_t n) { on_written(ec, n); });
  } else {
    asio::async_write(socket_, asio::buffer(wbuf_), std::move(on_written));
  }
}

void BenchConnection::Read() {
  constexpr size_t kReadSize = 64 * 1024;
  char* room = in_.Room(kReadSize);
  auto on_read = [self = shared_from_this(), gen = generation_](const boost::system::error_code& ec,
                                                                size_t n) {
    if (gen != self->generation_ || self->stop_) return;
    self->read_at_ = Clock::now();  // every answer in this read arrived by now
    self->in_.Filled(n);
    if (ec) return self->Fail("read: " + ec.message());
    const bool ok = self->cfg_.http   ? self->ParseHttp()
                    : self->cfg_.resp ? self->ParseResp()
                                      : self->ParseBinary();
    if (!ok) return;
    if (self->cfg_.rate <= 0) self->Fill();
    self->Read();
  };
  const auto buffer = asio::buffer(room, kReadSize);
  if (tls_) {
    tls_->async_read_some(
        buffer, [tls = tls_, on_read = std::move(on_read)](const boost::system::error_code& ec,
                                                           size_t n) { on_read(ec, n); });
  } else {
    socket_.async_read_some(buffer, std::move(on_read));
  }
}

}  // namespace seqd::bench
