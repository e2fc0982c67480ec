// seqbench: load generator for seqd over the binary protocol, HTTP or RESP
// (the last also drives redis-server, for comparison).
//
// N connections each keep D requests in flight (pipelined; binary responses
// are matched by request id, HTTP ones in order), each asking for C IDs (of a
// key, or snowflake IDs with --snowflake), for S seconds. The binary side uses the raw codec, not
// the client library, so it measures the server and not the client's retry logic.
//
// This file: the usage, the flags and the run (connections, threads, the
// clock, the results); the connections are in bench_connection.h, the report
// in bench_report.h.
#include "seqbench.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <charconv>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench_connection.h"
#include "bench_pacer.h"
#include "bench_report.h"
#include "bench_sched.h"
#include "bench_sse_subscriber.h"
#include "bench_subscriber.h"
#include "mini_http.h"
#include "proto/binary_codec.h"
#include "seqd/client.h"
#include "tls_client.h"
#include "tool_version.h"

namespace seqd::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr const char* kUsage =
    R"(Usage: seqbench --tcp HOST:PORT (--key KEY | --new-keys PREFIX | --snowflake | --messages CONV) [OPTION]...
  or:  seqbench --http HOST:PORT (--key KEY | --new-keys PREFIX | --snowflake | --messages CONV) [OPTION]...
  or:  seqbench --resp HOST:PORT (--key KEY | --new-keys PREFIX) [OPTION]...
  or:  seqbench --help | --version

Load generator for seqd: N connections each keep D requests in flight, each
asking for C IDs of KEY (or C snowflake IDs), for S seconds; then reports
throughput and latency.

  --tcp HOST:PORT     the binary protocol (raw codec, no retries)
  --http HOST:PORT    the HTTP API: keep-alive, pipelined GET /seq/KEY?count=C
                      (GET /snowflake?count=C with --snowflake)
  --resp HOST:PORT    the Redis protocol (RESP2): pipelined INCR KEY (INCRBY
                      KEY C with --count C), answered in order; drives seqd's
                      RESP listener and redis-server alike. Integer replies
                      count as IDs, error replies as errors (by their text)
  --also-resp HOST:PORT
                      with --tcp and --key: as many RESP connections again
                      (INCR KEY on this endpoint) driven by the same clock,
                      at the same --rate, in the same process; the report
                      gives each protocol's figures apart, so both meet the
                      same stalls of the client (a paired comparison)
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
  --sse HOST:PORT     with --subscribe: the N subscribers are Server-Sent
                      Event streams on this HTTP endpoint (GET
                      /conversations/CONV/events, plain HTTP), measured the
                      same way; the sender may then be --tcp or --http
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
  --token SECRET      the token to present (AUTH first on each binary or
                      RESP connection, a bearer header on HTTP); default: the
                      environment variable SEQD_TOKEN
%TLS%  --json              print the report as JSON
  -h, --help          this help
  --version           the version and commit (as seqd --version)

Latency is from writing a request (with --rate: from its scheduled time) to
reading its whole response, recorded in a log-linear histogram (every value
within 1% to 18 minutes, fixed memory); the report gives p50, p99, p999,
p9999 and max, and seqbench's own CPU time and time spent runnable but
waiting for a CPU (a starved client adds that wait to the latencies; JSON
client_cpu_s, client_wait_s). Errors count answers other than OK / 200 / a RESP integer and
connection failures (a failed connection is reopened after 100 ms).
With TLS every connection handshakes (and verifies the server) once before its
requests; run the same load with and without --tls to compare (the report
says "tls").
Exit status: 0 if every request succeeded, 1 if any failed, 2 on a usage error.
)";

std::string Usage() {
  std::string usage = kUsage;
  usage.replace(usage.find("%TLS%"), 5, seqd::tools::kTlsFlagsHelp);
  return usage;
}

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
    } else if (a == "--version") {
      std::cout << seqd::tools::VersionLine("seqbench") << "\n";
      std::exit(0);
    } else if (a == "--tcp" || a == "--http" || a == "--resp") {
      if (have_target) throw UsageError{"give one of --tcp, --http and --resp"};
      have_target = true;
      cfg.http = a == "--http";
      cfg.resp = a == "--resp";
      cfg.endpoint = need();
      if (!seqd::client::SplitEndpoint(cfg.endpoint, cfg.host, cfg.port)) {
        throw UsageError{a + " wants HOST:PORT, got '" + cfg.endpoint + "'"};
      }
    } else if (a == "--also-resp") {
      cfg.also_resp_endpoint = need();
      std::string host, port;
      if (!seqd::client::SplitEndpoint(cfg.also_resp_endpoint, host, port)) {
        throw UsageError{"--also-resp wants HOST:PORT, got '" + cfg.also_resp_endpoint + "'"};
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
    } else if (a == "--sse") {
      cfg.sse_endpoint = need();
      if (!seqd::client::SplitEndpoint(cfg.sse_endpoint, cfg.sse_host, cfg.sse_port)) {
        throw UsageError{"--sse wants HOST:PORT, got '" + cfg.sse_endpoint + "'"};
      }
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
  if (!have_target) {
    throw UsageError{"give --tcp HOST:PORT, --http HOST:PORT or --resp HOST:PORT"};
  }
  if (cfg.requests > 0 && !duration_given) cfg.duration_s = 60;
  cfg.tls.ApplyEnvironment();
  if (static_cast<int>(cfg.snowflake) + static_cast<int>(!cfg.key.empty()) +
          static_cast<int>(!cfg.new_keys.empty()) + static_cast<int>(!cfg.messages.empty()) !=
      1) {
    throw UsageError{"give one of --key, --new-keys, --snowflake and --messages"};
  }
  if (cfg.resp && (cfg.snowflake || !cfg.messages.empty())) {
    throw UsageError{"--resp goes with --key or --new-keys (INCR)"};
  }
  if (!cfg.also_resp_endpoint.empty() &&
      (cfg.http || cfg.resp || cfg.key.empty() || cfg.requests > 0 || cfg.tls.enabled)) {
    throw UsageError{"--also-resp goes with --tcp and --key, without --requests or TLS"};
  }
  if (cfg.messages.empty() && (cfg.convs != 1 || cfg.subscribers > 0)) {
    throw UsageError{"--convs and --subscribe go with --messages"};
  }
  if (!cfg.sse_endpoint.empty() && (cfg.subscribers == 0 || cfg.tls.enabled)) {
    throw UsageError{"--sse goes with --subscribe, without TLS"};
  }
  if (cfg.subscribers > 0 && cfg.sse_endpoint.empty() && (cfg.http || cfg.tls.enabled)) {
    throw UsageError{"--subscribe needs --tcp without TLS (pushes come over the binary protocol)"};
  }
  cfg.run_id = "sb" + std::to_string(std::random_device{}());
  if (cfg.threads == 0) {
    cfg.threads = static_cast<int>(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
  }
  return cfg;
}

// The subscribers of --subscribe: binary connections, or SSE streams (--sse).
struct Subscribers {
  std::vector<std::shared_ptr<seqd::tools::BenchSubscriber>> binary;
  std::vector<std::shared_ptr<seqd::tools::SseBenchSubscriber>> sse;
  std::atomic<uint64_t> pushed{0};  // pushes read so far, all subscribers
  bool empty() const { return binary.empty() && sse.empty(); }
  void Stop() {
    for (auto& s : binary) s->Stop();
    for (auto& s : sse) s->Stop();
  }
  seqd::tools::BenchSubscriber::Result Merged() const {
    seqd::tools::BenchSubscriber::Result out;
    auto add = [&out](const seqd::tools::BenchSubscriber::Result& r) {
      out.pushes += r.pushes;
      out.errors += r.errors;
      for (const auto& [k, v] : r.error_kinds) out.error_kinds[k] += v;
      out.latency.Merge(r.latency);
    };
    for (auto& s : binary) add(s->result());
    for (auto& s : sse) add(s->result());
    return out;
  }
};

// --subscribe: starts the subscriber connections and waits (10 s at most)
// until every one has subscribed, so the load starts with all of them live.
bool StartSubscribers(const Config& cfg, asio::io_context& io,
                      const tcp::resolver::results_type& endpoints, Subscribers& out) {
  if (cfg.subscribers == 0) return true;
  std::vector<std::string> convs;
  for (int i = 0; i < cfg.convs; ++i) {
    convs.push_back(cfg.convs <= 1 ? cfg.messages : cfg.messages + "_" + std::to_string(i));
  }
  std::atomic<int> ready{0}, failed{0};
  auto done = [&ready, &failed](bool ok) { ++(ok ? ready : failed); };
  if (!cfg.sse_endpoint.empty()) {
    tcp::resolver resolver(io);
    const auto sse_endpoints = resolver.resolve(cfg.sse_host, cfg.sse_port);
    for (int i = 0; i < cfg.subscribers; ++i) {
      out.sse.push_back(std::make_shared<seqd::tools::SseBenchSubscriber>(
          io, sse_endpoints, cfg.sse_endpoint, convs, cfg.token));
      out.sse.back()->CountInto(&out.pushed);
      out.sse.back()->Start(done);
    }
  } else {
    for (int i = 0; i < cfg.subscribers; ++i) {
      out.binary.push_back(
          std::make_shared<seqd::tools::BenchSubscriber>(io, endpoints, convs, cfg.token));
      out.binary.back()->CountInto(&out.pushed);
      out.binary.back()->Start(done);
    }
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
  // --also-resp: the RESP side's settings, the same run otherwise.
  Config resp_cfg = cfg;
  tcp::resolver::results_type resp_endpoints;
  const bool paired = !cfg.also_resp_endpoint.empty();
  if (paired) {
    resp_cfg.resp = true;
    resp_cfg.endpoint = cfg.also_resp_endpoint;
    seqd::client::SplitEndpoint(resp_cfg.endpoint, resp_cfg.host, resp_cfg.port);
    resp_endpoints = resolver.resolve(resp_cfg.host, resp_cfg.port, ec);
    if (ec) {
      std::cerr << "seqbench: resolve " << resp_cfg.endpoint << ": " << ec.message() << "\n";
      return 1;
    }
  }
  // Paired, the two sides alternate (binary, RESP, binary, ...), so each
  // tick of the pacer serves them in turn.
  std::vector<std::shared_ptr<BenchConnection>> conns, resp_conns, all;
  for (int i = 0; i < cfg.connections; ++i) {
    conns.push_back(std::make_shared<BenchConnection>(io, cfg, endpoints, stop, tls_context));
    const int64_t share = cfg.requests / cfg.connections + (i < cfg.requests % cfg.connections);
    conns.back()->SetIndex(i, cfg.requests > 0 ? share : -1);
    all.push_back(conns.back());
    if (!paired) continue;
    resp_conns.push_back(
        std::make_shared<BenchConnection>(io, resp_cfg, resp_endpoints, stop, tls_context));
    resp_conns.back()->SetIndex(i, -1);
    all.push_back(resp_conns.back());
  }
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < cfg.threads; ++i) threads.emplace_back([&io] { io.run(); });
  Subscribers subscribers;
  if (!StartSubscribers(cfg, io, endpoints, subscribers)) {
    std::cerr << "seqbench: the subscribers could not all subscribe within 10 s\n";
    for (const auto& [k, v] : subscribers.Merged().error_kinds) {
      std::cerr << "  " << k << ": " << v << "\n";
    }
    subscribers.Stop();
    work.reset();
    for (auto& t : threads) t.join();
    return 1;
  }

  const seqd::tools::SchedTimes sched_before = seqd::tools::ProcessSchedTimes();
  const Clock::time_point start = Clock::now();
  cfg.start = resp_cfg.start = start;  // read by the connections only once started
  for (auto& c : all) c->Start();
  std::shared_ptr<BenchPacer> pacer;  // --rate only
  if (cfg.rate > 0) {
    pacer = std::make_shared<BenchPacer>(io, PaceGrid::For(cfg.rate, cfg.connections), stop, all);
    pacer->Start(start);
  }
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
  seqd::tools::SchedTimes sched = seqd::tools::ProcessSchedTimes();  // threads still alive
  sched.cpu_s -= sched_before.cpu_s;
  sched.wait_s -= sched_before.wait_s;
  if (pacer) pacer->Stop();
  for (auto& c : all) c->Stop();
  if (!subscribers.empty()) {  // the last pushes: every one expected, 5 s at most
    const uint64_t expected =
        static_cast<uint64_t>(finished.load()) * static_cast<uint64_t>(cfg.subscribers);
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (subscribers.pushed.load(std::memory_order_relaxed) < expected && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // and any extra
  }
  subscribers.Stop();
  work.reset();
  for (auto& t : threads) t.join();

  Stats total, resp_total;
  for (auto& c : conns) total.Merge(c->stats());
  for (auto& c : resp_conns) resp_total.Merge(c->stats());
  const seqd::tools::BenchSubscriber::Result pushes = subscribers.Merged();
  PrintReport(cfg, elapsed, total, pushes, sched, paired ? &resp_total : nullptr);
  const bool resp_ok = !paired || (resp_total.errors == 0 && resp_total.requests > 0);
  return total.errors == 0 && pushes.errors == 0 && total.requests > 0 && resp_ok ? 0 : 1;
}

}  // namespace
}  // namespace seqd::bench

int main(int argc, char** argv) {
  try {
    return seqd::bench::Run(seqd::bench::ParseArgs(argc, argv));
  } catch (const seqd::bench::UsageError& e) {
    std::cerr << "seqbench: " << e.message << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "seqbench: " << e.what() << "\n";
    return 1;
  }
}
