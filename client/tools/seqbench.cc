// seqbench: load generator for seqd over the binary protocol or HTTP.
//
// N connections each keep D requests in flight (pipelined; binary responses
// are matched by request id, HTTP ones in order), each asking for C IDs (of a
// key, or snowflake IDs with --snowflake), for S seconds. The binary side uses the raw codec, not
// the client library, so it measures the server and not the client's retry logic.
//
// Over 400 lines: one tool (options, two protocol drivers, the latency
// histogram and the report) that is run as a whole.
#include <atomic>
#include <bit>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench_histogram.h"
#include "bench_subscriber.h"
#include "mini_http.h"
#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"
#include "seqd/client.h"
#include "tls_client.h"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using seqd::tools::Histogram;

constexpr const char* kUsage =
    R"(usage: seqbench (--tcp HOST:PORT | --http HOST:PORT)
                (--key KEY | --new-keys PREFIX | --snowflake | --messages CONV)
                [options]

Load generator for seqd: N connections each keep D requests in flight, each
asking for C IDs of KEY (or C snowflake IDs), for S seconds; then reports
throughput and latency.

  --tcp HOST:PORT     the binary protocol (raw codec, no retries)
  --http HOST:PORT    the HTTP API: keep-alive, pipelined GET /seq/KEY?count=C
                      (GET /snowflake?count=C with --snowflake)
  --key KEY           the key to ask for (segment IDs: NEXT_IDS)
  --new-keys PREFIX   a fresh key on every request: PREFIX, then the
                      connection's number and a counter (a storm of new
                      conversations; PREFIX should match an auto-create rule)
  --snowflake         snowflake IDs instead of a key's (SNOWFLAKE; C at most
                      the server's snowflake max count, 4096 by default)
  --messages CONV     send messages to conversation CONV instead (SEND, or
                      POST /conversations/CONV/messages), each with a fresh
                      client_msg_id; the report counts messages stored
  --convs N           with --messages: spread over CONV_0 .. CONV_{N-1}
  --payload B         with --messages: payload bytes (default 100, min 16)
  --subscribe N       with --messages and --tcp: N more connections that
                      subscribe to the conversations first; reports push
                      fan-out latency (a message's SEND written to its push
                      read) and pushes received against those expected
  --connections N     connections (default 4)
  --pipeline D        requests in flight per connection (default 16)
  --count C           IDs per request (default 1)
  --duration S        seconds to run, fractions allowed (default 10)
  --requests N        send N requests in all, then stop once they are
                      answered (a burst); --duration is then a time limit
                      (default 60) and the report covers the burst only
  --rate R            open loop: R requests per second in all (spread over the
                      connections, on a fixed schedule, however slow the
                      answers); latency counts from each request's scheduled
                      time, so a stall shows in full (no coordinated
                      omission). --pipeline is then ignored
  --warmup S          leave the requests scheduled in the first S seconds
                      out of the latency figures (counted apart)
  --threads T         I/O threads (default: min(4, cores))
  --token SECRET      the token to present (AUTH first on each binary
                      connection, a bearer header on HTTP); default: the
                      environment variable SEQD_TOKEN
%TLS%  --json              print the report as JSON
  -h, --help          this help

Latency is from writing a request to reading its whole response, recorded in
a log-linear histogram (about 3% resolution). Errors count answers other than
OK / 200 and connection failures (a failed connection is reopened after 100 ms).
With TLS every connection handshakes (and verifies the server) once before its
requests; run the same load with and without --tls to compare (the report
says "tls").
Exit status: 0 if every request succeeded, 1 if any failed, 2 on a usage error.
)";

struct UsageError {
  std::string message;
};

std::string Usage() {
  std::string usage = kUsage;
  usage.replace(usage.find("%TLS%"), 5, seqd::tools::kTlsFlagsHelp);
  return usage;
}

struct Stats {
  uint64_t requests = 0;         // answered
  uint64_t warmup_requests = 0;  // answered, sent during --warmup (not in latency)
  uint64_t ids = 0;
  uint64_t errors = 0;
  std::map<std::string, uint64_t> error_kinds;
  Histogram latency;
  void Error(const std::string& kind) {
    ++errors;
    ++error_kinds[kind];
  }
  void Merge(const Stats& o) {
    requests += o.requests;
    warmup_requests += o.warmup_requests;
    ids += o.ids;
    errors += o.errors;
    for (const auto& [k, v] : o.error_kinds) error_kinds[k] += v;
    latency.Merge(o.latency);
  }
};

struct Config {
  bool http = false;
  std::string host, port, endpoint;
  std::string key;
  std::string new_keys;    // --new-keys PREFIX; "" for one key
  bool snowflake = false;  // SNOWFLAKE / GET /snowflake instead of a key's IDs
  std::string messages;    // --messages CONV: SEND messages instead of asking for IDs
  int convs = 1;           // --convs N: CONV_0 .. CONV_{N-1}; 1: CONV itself
  size_t payload = 100;    // --payload B: message payload bytes
  int subscribers = 0;     // --subscribe N: subscriber connections measuring pushes
  std::string run_id;      // makes client_msg_ids unique across runs
  int connections = 4;
  int pipeline = 16;
  uint32_t count = 1;
  double duration_s = 10;
  int64_t requests = 0;  // --requests: the burst's size; 0: run for duration_s
  // Requests answered or lost with a failed connection, all connections.
  std::atomic<int64_t>* finished = nullptr;
  double rate = 0;            // --rate: requests/s in all; 0: closed loop
  double warmup_s = 0;        // --warmup
  Clock::time_point start{};  // when the run starts (set before connections start)
  int threads = 0;
  bool json = false;
  std::string token;  // --token, else SEQD_TOKEN; "" for none
  seqd::tools::TlsFlags tls;
};

// The request id of the AUTH frame each binary connection starts with (no
// NEXT_IDS request uses it).
constexpr uint32_t kAuthRequestId = 0xFFFFFFFFu;

class BenchConnection : public std::enable_shared_from_this<BenchConnection> {
 public:
  BenchConnection(asio::io_context& io, const Config& cfg, tcp::resolver::results_type endpoints,
                  const std::atomic<bool>& stop, std::shared_ptr<asio::ssl::context> tls_context)
      : strand_(asio::make_strand(io)),
        socket_(strand_),
        tls_context_(std::move(tls_context)),
        retry_timer_(strand_),
        pace_timer_(strand_),
        cfg_(cfg),
        endpoints_(std::move(endpoints)),
        stop_(stop) {
    if (cfg_.http) {
      http_request_ = HttpRequestFor(cfg_.key);
    }
  }

  // Numbers the connections, so --new-keys keys never repeat across them.
  // `quota`: requests this connection sends in all (-1: no limit).
  void SetIndex(int index, int64_t quota) {
    index_ = index;
    quota_ = quota;
  }

  void Start() {
    asio::post(strand_, [self = shared_from_this()] { self->Connect(); });
  }
  void Stop() {
    asio::post(strand_, [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->socket_.close(ignored);
      self->retry_timer_.cancel();
      self->pace_timer_.cancel();
    });
  }
  const Stats& stats() const { return stats_; }

 private:
  void Connect() {
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
  void Handshake() {
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

  void Started() {
    connected_ = true;
    if (!cfg_.http && !cfg_.token.empty()) {
      seqd::proto::AppendFrame(out_, seqd::proto::Opcode::kAuth, 0, kAuthRequestId, cfg_.token);
    }
    if (cfg_.rate > 0) {
      if (!pacing_) {
        pacing_ = true;
        next_due_ = std::max(Clock::now(), cfg_.start);
        Pace();
      }
    } else {
      Fill();
    }
    Read();
  }

  // Open loop: sends every request whose scheduled time has come, stamped
  // with that time, then sleeps until the next one is due.
  void Pace() {
    if (stop_) return;
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(cfg_.connections / cfg_.rate));
    const Clock::time_point now = Clock::now();
    if (connected_) {
      while (next_due_ <= now && !QuotaSent()) {
        Append(next_due_);
        next_due_ += interval;
      }
      Write();
    }
    // At most 10,000 wake-ups a second (a request may leave up to 100 us
    // after its time: counted in its latency); late requests keep their
    // scheduled stamps.
    pace_timer_.expires_at(std::max(next_due_, now + std::chrono::microseconds(100)));
    pace_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->Pace();
    });
  }

  void Fail(const std::string& what) {
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

  void Fill() {
    const Clock::time_point now = Clock::now();
    while (in_flight_ < cfg_.pipeline && !stop_ && !QuotaSent()) Append(now);
    Write();
  }

  std::string HttpRequestFor(const std::string& key) const {
    const std::string path = cfg_.snowflake ? "/snowflake" : "/seq/" + seqd::tools::UrlEncode(key);
    return seqd::tools::BuildHttpRequest("GET", path + "?count=" + std::to_string(cfg_.count),
                                         cfg_.endpoint, {}, "application/json", cfg_.token);
  }

  // The conversation of the next message: --messages CONV, spread over
  // --convs conversations.
  std::string NextConv() const {
    if (cfg_.convs <= 1) return cfg_.messages;
    return cfg_.messages + "_" + std::to_string((index_ + appended_) % cfg_.convs);
  }

  // A SEND of a message stamped with `stamp` (for --subscribe), with a
  // client_msg_id never used before.
  void AppendMessage(Clock::time_point stamp) {
    const std::string conv = NextConv();
    const std::string id =
        cfg_.run_id + "-" + std::to_string(index_) + "-" + std::to_string(appended_);
    const std::string payload = seqd::tools::StampedPayload(stamp, cfg_.payload);
    if (cfg_.http) {
      const std::string body = "{\"sender_id\":\"seqbench\",\"client_msg_id\":\"" + id +
                               "\",\"payload\":\"" + payload + "\"}";
      out_ += seqd::tools::BuildHttpRequest(
          "POST", "/conversations/" + seqd::tools::UrlEncode(conv) + "/messages", cfg_.endpoint,
          body, "application/json", cfg_.token);
      return;
    }
    seqd::proto::AppendRequest(out_, next_id_,
                               seqd::proto::SendReq{conv, "seqbench", id, 0, payload});
  }

  // The key of the next request: --key, or a fresh one with --new-keys.
  const std::string& NextKey() {
    if (cfg_.new_keys.empty()) return cfg_.key;
    fresh_key_ = cfg_.new_keys + std::to_string(index_) + "_" + std::to_string(++fresh_count_);
    return fresh_key_;
  }

  bool QuotaSent() const { return quota_ >= 0 && appended_ >= quota_; }

  // Queues one request, its latency counted from `stamp`.
  void Append(Clock::time_point stamp) {
    ++appended_;
    if (cfg_.http) {
      if (!cfg_.messages.empty()) {
        AppendMessage(stamp);
      } else {
        out_ += cfg_.new_keys.empty() ? http_request_ : HttpRequestFor(NextKey());
      }
      sent_order_.push_back(stamp);
    } else {
      if (++next_id_ == 0 || next_id_ == kAuthRequestId) next_id_ = 1;
      if (!cfg_.messages.empty()) {
        AppendMessage(stamp);
      } else if (cfg_.snowflake) {
        seqd::proto::AppendSnowflakeRequest(out_, next_id_, cfg_.count);
      } else {
        seqd::proto::AppendNextIdsRequest(out_, next_id_, NextKey(), cfg_.count);
      }
      sent_.emplace(next_id_, stamp);
    }
    ++in_flight_;
  }

  void Write() {
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

  void Read() {
    const size_t old = in_.size();
    in_.resize(old + 64 * 1024);
    auto on_read = [self = shared_from_this(), old, gen = generation_](
                       const boost::system::error_code& ec, size_t n) {
      if (gen != self->generation_ || self->stop_) return;
      self->in_.resize(old + n);
      if (ec) return self->Fail("read: " + ec.message());
      if (!(self->cfg_.http ? self->ParseHttp() : self->ParseBinary())) return;
      if (self->cfg_.rate <= 0) self->Fill();
      self->Read();
    };
    const auto buffer = asio::buffer(in_.data() + old, 64 * 1024);
    if (tls_) {
      tls_->async_read_some(
          buffer, [tls = tls_, on_read = std::move(on_read)](const boost::system::error_code& ec,
                                                             size_t n) { on_read(ec, n); });
    } else {
      socket_.async_read_some(buffer, std::move(on_read));
    }
  }

  void Record(Clock::time_point sent) {
    ++stats_.requests;
    cfg_.finished->fetch_add(1, std::memory_order_relaxed);
    --in_flight_;
    if (cfg_.warmup_s > 0 &&
        sent < cfg_.start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(cfg_.warmup_s))) {
      ++stats_.warmup_requests;
      return;
    }
    stats_.latency.Record(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent).count());
  }

  // False when the connection failed.
  bool ParseBinary() {
    size_t pos = 0;
    for (;;) {
      const seqd::proto::DecodeResult r =
          seqd::proto::DecodeFrame(std::string_view(in_.data() + pos, in_.size() - pos));
      if (r.state == seqd::proto::DecodeState::kNeedMore) break;
      if (r.state == seqd::proto::DecodeState::kError) {
        Fail("undecodable frame: " + std::string(seqd::proto::StatusName(r.error)));
        return false;
      }
      const auto resp = seqd::proto::ParseResponse(r.frame.payload);
      if (r.frame.request_id == kAuthRequestId && resp) {
        if (resp->status != seqd::proto::Status::kOk) {
          Fail("AUTH: " + std::string(seqd::proto::StatusName(resp->status)));
          return false;
        }
        pos += r.consumed;
        continue;
      }
      auto it = sent_.find(r.frame.request_id);
      if (r.frame.request_id == 0 || it == sent_.end() || !resp) {
        Fail(resp && r.frame.request_id == 0
                 ? "protocol error: " + std::string(seqd::proto::StatusName(resp->status))
                 : std::string("unexpected frame"));
        return false;
      }
      Record(it->second);
      sent_.erase(it);
      if (resp->status == seqd::proto::Status::kOk) {
        CountIds(resp->result);
      } else {
        stats_.Error(std::string(seqd::proto::StatusName(resp->status)));
      }
      pos += r.consumed;
    }
    in_.erase(in_.begin(), in_.begin() + pos);
    return true;
  }

  // Adds the IDs of an OK binary result to the stats.
  void CountIds(std::string_view result) {
    if (!cfg_.messages.empty()) {
      if (!seqd::proto::DecodeBody<seqd::proto::SendRes>(result)) {
        return stats_.Error("malformed SEND result");
      }
      ++stats_.ids;  // a message stored
      return;
    }
    if (cfg_.snowflake) {
      auto ids = seqd::proto::ParseSnowflakeResult(result);
      if (!ids) return stats_.Error("malformed SNOWFLAKE result");
      stats_.ids += ids->size();
      return;
    }
    auto ranges = seqd::proto::ParseNextIdsResult(result);
    if (!ranges) return stats_.Error("malformed NEXT_IDS result");
    for (const auto& range : *ranges) stats_.ids += range.last - range.first + 1;
  }

  bool ParseHttp() {
    size_t pos = 0;
    bool reconnect = false;
    while (!reconnect) {
      seqd::tools::HttpResponse res;
      size_t consumed = 0;
      std::string error;
      const auto st = seqd::tools::ParseHttpResponse(
          std::string_view(in_.data() + pos, in_.size() - pos), res, consumed, error);
      if (st == seqd::tools::HttpParse::kNeedMore) break;
      if (st == seqd::tools::HttpParse::kError || sent_order_.empty()) {
        Fail(st == seqd::tools::HttpParse::kError ? "bad HTTP response: " + error
                                                  : std::string("unexpected HTTP response"));
        return false;
      }
      Record(sent_order_.front());
      sent_order_.pop_front();
      if (res.status / 100 == 2) {
        stats_.ids += cfg_.messages.empty() ? cfg_.count : 1;
      } else {
        stats_.Error("HTTP " + std::to_string(res.status));
      }
      pos += consumed;
      reconnect = !res.keep_alive;
    }
    in_.erase(in_.begin(), in_.begin() + pos);
    if (reconnect) {
      // The requests still in flight are lost with the connection.
      Fail("server closed the connection");
      return false;
    }
    return true;
  }

  asio::strand<asio::io_context::executor_type> strand_;
  tcp::socket socket_;
  std::shared_ptr<asio::ssl::context> tls_context_;       // --tls only
  std::shared_ptr<asio::ssl::stream<tcp::socket&>> tls_;  // this connection's, over socket_
  asio::steady_timer retry_timer_;
  asio::steady_timer pace_timer_;  // --rate only
  bool pacing_ = false;
  Clock::time_point next_due_{};  // --rate: the next request's scheduled time
  const Config& cfg_;
  tcp::resolver::results_type endpoints_;
  const std::atomic<bool>& stop_;
  std::string http_request_;
  std::string out_, wbuf_;
  bool writing_ = false;
  bool connected_ = false;
  std::vector<char> in_;
  int in_flight_ = 0;
  uint32_t next_id_ = 0;
  int index_ = 0;
  int64_t quota_ = -1;    // requests to send in all; -1: no limit
  int64_t appended_ = 0;  // requests queued so far (resent ones not counted again)
  uint64_t fresh_count_ = 0;
  std::string fresh_key_;
  uint64_t generation_ = 0;
  std::unordered_map<uint32_t, Clock::time_point> sent_;
  std::deque<Clock::time_point> sent_order_;
  Stats stats_;
};

template <typename T>
T Number(const std::string& s, const char* what, T min, T max) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) {
    std::ostringstream msg;
    msg << what << " must be a number in [" << min << ", " << max << "], got '" << s << "'";
    throw UsageError{msg.str()};
  }
  return v;
}

Config ParseArgs(int argc, char** argv) {
  Config cfg;
  if (const char* env = std::getenv("SEQD_TOKEN")) cfg.token = env;
  bool have_target = false;
  bool duration_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool inline_value = false;
    if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    auto need = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << Usage();
      std::exit(0);
    } else if (a == "--tcp" || a == "--http") {
      if (have_target) throw UsageError{"give one of --tcp and --http"};
      have_target = true;
      cfg.http = a == "--http";
      cfg.endpoint = need();
      if (!seqd::client::SplitEndpoint(cfg.endpoint, cfg.host, cfg.port)) {
        throw UsageError{a + " wants HOST:PORT, got '" + cfg.endpoint + "'"};
      }
    } else if (a == "--key") {
      cfg.key = need();
    } else if (a == "--new-keys") {
      cfg.new_keys = need();
      if (cfg.new_keys.empty() || cfg.new_keys.size() > 100) {
        throw UsageError{"--new-keys wants a prefix of 1 to 100 bytes"};
      }
    } else if (a == "--snowflake") {
      cfg.snowflake = true;
    } else if (a == "--messages") {
      cfg.messages = need();
      if (cfg.messages.empty() || cfg.messages.size() > 100) {
        throw UsageError{"--messages wants a conversation id of 1 to 100 bytes"};
      }
    } else if (a == "--convs") {
      cfg.convs = Number<int>(need(), "--convs", 1, 1000);
    } else if (a == "--payload") {
      cfg.payload = Number<size_t>(need(), "--payload", 16, 1 << 20);
    } else if (a == "--subscribe") {
      cfg.subscribers = Number<int>(need(), "--subscribe", 1, 10000);
    } else if (a == "--connections") {
      cfg.connections = Number<int>(need(), "--connections", 1, 10000);
    } else if (a == "--pipeline") {
      cfg.pipeline = Number<int>(need(), "--pipeline", 1, 100000);
    } else if (a == "--count") {
      cfg.count = Number<uint32_t>(need(), "--count", 1, 0xFFFFFFFFu);
    } else if (a == "--duration") {
      cfg.duration_s = Number<double>(need(), "--duration", 0.001, 1e6);
      duration_given = true;
    } else if (a == "--requests") {
      cfg.requests = Number<int64_t>(need(), "--requests", 1, 1'000'000'000);
    } else if (a == "--rate") {
      cfg.rate = Number<double>(need(), "--rate", 1, 1e8);
    } else if (a == "--warmup") {
      cfg.warmup_s = Number<double>(need(), "--warmup", 0, 1e6);
    } else if (a == "--threads") {
      cfg.threads = Number<int>(need(), "--threads", 1, 1024);
    } else if (a == "--json") {
      cfg.json = true;
    } else if (cfg.tls.Parse(a, need)) {
    } else if (a == "--token") {
      cfg.token = need();
      if (cfg.token.size() > seqd::proto::kMaxAuthSecret) throw UsageError{"--token is too long"};
    } else {
      throw UsageError{"unexpected argument '" + a + "' (try --help)"};
    }
  }
  if (!have_target) throw UsageError{"give --tcp HOST:PORT or --http HOST:PORT"};
  if (cfg.requests > 0 && !duration_given) cfg.duration_s = 60;
  cfg.tls.ApplyEnvironment();
  if (static_cast<int>(cfg.snowflake) + static_cast<int>(!cfg.key.empty()) +
          static_cast<int>(!cfg.new_keys.empty()) + static_cast<int>(!cfg.messages.empty()) !=
      1) {
    throw UsageError{"give one of --key, --new-keys, --snowflake and --messages"};
  }
  if (cfg.messages.empty() && (cfg.convs != 1 || cfg.subscribers > 0)) {
    throw UsageError{"--convs and --subscribe go with --messages"};
  }
  if (cfg.subscribers > 0 && (cfg.http || cfg.tls.enabled)) {
    throw UsageError{"--subscribe needs --tcp without TLS (pushes come over the binary protocol)"};
  }
  cfg.run_id = "sb" + std::to_string(std::random_device{}());
  if (cfg.threads == 0) {
    cfg.threads = static_cast<int>(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
  }
  return cfg;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// --subscribe: starts the subscriber connections and waits (10 s at most)
// until every one has subscribed, so the load starts with all of them live.
bool StartSubscribers(const Config& cfg, asio::io_context& io,
                      const tcp::resolver::results_type& endpoints,
                      std::vector<std::shared_ptr<seqd::tools::BenchSubscriber>>& out) {
  if (cfg.subscribers == 0) return true;
  std::vector<std::string> convs;
  for (int i = 0; i < cfg.convs; ++i) {
    convs.push_back(cfg.convs <= 1 ? cfg.messages : cfg.messages + "_" + std::to_string(i));
  }
  std::atomic<int> ready{0}, failed{0};
  for (int i = 0; i < cfg.subscribers; ++i) {
    out.push_back(std::make_shared<seqd::tools::BenchSubscriber>(io, endpoints, convs, cfg.token));
    out.back()->Start([&ready, &failed](bool ok) { ++(ok ? ready : failed); });
  }
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (ready + failed < cfg.subscribers && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ready == cfg.subscribers;
}

int Run(Config cfg) {
  asio::io_context io(cfg.threads);
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  tcp::resolver::results_type endpoints = resolver.resolve(cfg.host, cfg.port, ec);
  if (ec) {
    std::cerr << "seqbench: resolve " << cfg.endpoint << ": " << ec.message() << "\n";
    return 1;
  }
  std::shared_ptr<asio::ssl::context> tls_context;
  if (cfg.tls.enabled) {
    try {
      tls_context = seqd::client::detail::MakeTlsClientContext(cfg.tls.ca_file, cfg.tls.cert_file,
                                                               cfg.tls.key_file);
    } catch (const std::invalid_argument& e) {
      std::cerr << "seqbench: " << e.what() << "\n";
      return 2;
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> finished{0};
  cfg.finished = &finished;
  std::vector<std::shared_ptr<BenchConnection>> conns;
  for (int i = 0; i < cfg.connections; ++i) {
    conns.push_back(std::make_shared<BenchConnection>(io, cfg, endpoints, stop, tls_context));
    const int64_t share = cfg.requests / cfg.connections + (i < cfg.requests % cfg.connections);
    conns.back()->SetIndex(i, cfg.requests > 0 ? share : -1);
  }
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < cfg.threads; ++i) threads.emplace_back([&io] { io.run(); });
  std::vector<std::shared_ptr<seqd::tools::BenchSubscriber>> subscribers;
  if (!StartSubscribers(cfg, io, endpoints, subscribers)) {
    std::cerr << "seqbench: the subscribers could not all subscribe within 10 s\n";
    for (auto& s : subscribers) s->Stop();
    work.reset();
    for (auto& t : threads) t.join();
    return 1;
  }

  const Clock::time_point start = Clock::now();
  cfg.start = start;  // read by the connections only once started
  for (auto& c : conns) c->Start();
  const auto limit = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(cfg.duration_s));
  if (cfg.requests > 0) {  // a burst: until every request is answered
    while (finished.load(std::memory_order_relaxed) < cfg.requests && Clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else {
    std::this_thread::sleep_until(limit);
  }
  stop = true;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& c : conns) c->Stop();
  if (!subscribers.empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // last pushes
  for (auto& s : subscribers) s->Stop();
  work.reset();
  for (auto& t : threads) t.join();

  Stats total;
  for (auto& c : conns) total.Merge(c->stats());
  seqd::tools::BenchSubscriber::Result pushes;
  for (auto& s : subscribers) {
    const auto& r = s->result();
    pushes.pushes += r.pushes;
    pushes.errors += r.errors;
    for (const auto& [k, v] : r.error_kinds) pushes.error_kinds[k] += v;
    pushes.latency.Merge(r.latency);
  }
  const auto push_us = [&](double q) { return pushes.latency.Quantile(q) / 1000.0; };
  const auto us = [&](double q) { return total.latency.Quantile(q) / 1000.0; };
  const double rps = total.requests / elapsed, ips = total.ids / elapsed;
  if (cfg.json) {
    std::ostringstream o;
    o.precision(12);
    o << "{\"protocol\":\"" << (cfg.http ? "http" : "tcp")
      << "\",\"tls\":" << (cfg.tls.enabled ? "true" : "false")
      << ",\"endpoint\":" << JsonString(cfg.endpoint) << ",\"mode\":\""
      << (cfg.snowflake           ? "snowflake"
          : !cfg.messages.empty() ? "messages"
          : cfg.new_keys.empty()  ? "key"
                                  : "new_keys")
      << "\",\"key\":"
      << JsonString(!cfg.messages.empty()  ? cfg.messages
                    : cfg.new_keys.empty() ? cfg.key
                                           : cfg.new_keys + "*")
      << ",\"connections\":" << cfg.connections << ",\"pipeline\":" << cfg.pipeline
      << ",\"count\":" << cfg.count << ",\"rate\":" << cfg.rate << ",\"warmup_s\":" << cfg.warmup_s
      << ",\"warmup_requests\":" << total.warmup_requests << ",\"duration_s\":" << elapsed
      << ",\"requests\":" << total.requests << ",\"requests_per_s\":" << rps
      << ",\"ids\":" << total.ids << ",\"ids_per_s\":" << ips << ",\"errors\":" << total.errors
      << ",\"error_kinds\":{";
    bool first = true;
    for (const auto& [k, v] : total.error_kinds) {
      o << (first ? "" : ",") << JsonString(k) << ":" << v;
      first = false;
    }
    o << "},\"latency_us\":{\"p50\":" << us(0.5) << ",\"p99\":" << us(0.99)
      << ",\"p999\":" << us(0.999) << ",\"max\":" << total.latency.max() / 1000.0
      << ",\"mean\":" << total.latency.mean() / 1000.0 << "}";
    if (!subscribers.empty()) {
      o << ",\"push\":{\"subscribers\":" << cfg.subscribers << ",\"pushes\":" << pushes.pushes
        << ",\"expected\":" << total.ids * cfg.subscribers << ",\"errors\":" << pushes.errors
        << ",\"latency_us\":{\"p50\":" << push_us(0.5) << ",\"p99\":" << push_us(0.99)
        << ",\"p999\":" << push_us(0.999) << ",\"max\":" << pushes.latency.max() / 1000.0 << "}}";
    }
    o << "}";
    std::cout << o.str() << "\n";
  } else {
    const std::string what = cfg.snowflake           ? "snowflake"
                             : !cfg.messages.empty() ? "messages=" + cfg.messages
                             : cfg.new_keys.empty()  ? "key=" + cfg.key
                                                     : "new-keys=" + cfg.new_keys + "*";
    std::printf("%s%s %s %s connections=%d pipeline=%d count=%u duration=%.2fs threads=%d\n",
                cfg.http ? "http" : "tcp", cfg.tls.enabled ? "+tls" : "", cfg.endpoint.c_str(),
                what.c_str(), cfg.connections, cfg.pipeline, cfg.count, elapsed, cfg.threads);
    std::printf("requests  %llu  (%.0f/s)\n", static_cast<unsigned long long>(total.requests), rps);
    if (cfg.rate > 0) std::printf("open loop %.0f/s scheduled\n", cfg.rate);
    if (cfg.warmup_s > 0) {
      std::printf("warmup    %llu requests in the first %.2fs, not in the latency figures\n",
                  static_cast<unsigned long long>(total.warmup_requests), cfg.warmup_s);
    }
    std::printf("%s  %llu  (%.0f/s)\n", cfg.messages.empty() ? "ids     " : "messages",
                static_cast<unsigned long long>(total.ids), ips);
    std::printf("errors    %llu\n", static_cast<unsigned long long>(total.errors));
    for (const auto& [k, v] : total.error_kinds) {
      std::printf("  %-40s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    }
    std::printf("latency   p50 %.1f us  p99 %.1f us  p999 %.1f us  max %.1f us  mean %.1f us\n",
                us(0.5), us(0.99), us(0.999), total.latency.max() / 1000.0,
                total.latency.mean() / 1000.0);
  }
  if (!subscribers.empty() && !cfg.json) {
    std::printf("pushes    %llu of %llu expected to %d subscribers, %llu errors\n",
                static_cast<unsigned long long>(pushes.pushes),
                static_cast<unsigned long long>(total.ids * cfg.subscribers), cfg.subscribers,
                static_cast<unsigned long long>(pushes.errors));
    for (const auto& [k, v] : pushes.error_kinds) {
      std::printf("  %-40s %llu\n", k.c_str(), static_cast<unsigned long long>(v));
    }
    std::printf(
        "push lat  p50 %.1f us  p99 %.1f us  p999 %.1f us  max %.1f us (send written to "
        "push read)\n",
        push_us(0.5), push_us(0.99), push_us(0.999), pushes.latency.max() / 1000.0);
  }
  return total.errors == 0 && pushes.errors == 0 && total.requests > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(ParseArgs(argc, argv));
  } catch (const UsageError& e) {
    std::cerr << "seqbench: " << e.message << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "seqbench: " << e.what() << "\n";
    return 1;
  }
}
