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
#include "tool_flags.h"
#include "tool_version.h"

namespace seqd::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using seqd::tools::FlagReader;

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
                      (CONV should match an auto-create rule, as a key)
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

// A flag that takes a number in [min, max] into a field of Config.
template <typename T>
struct NumberFlag {
  const char* name;
  T Config::*field;
  T min, max;
};
constexpr NumberFlag<int> kIntFlags[] = {
    {"--convs", &Config::convs, 1, 1000},
    {"--subscribe", &Config::subscribers, 1, 10000},
    {"--connections", &Config::connections, 1, 10000},
    {"--pipeline", &Config::pipeline, 1, 100000},
    {"--threads", &Config::threads, 1, 1024},
};
constexpr NumberFlag<double> kRealFlags[] = {
    {"--rate", &Config::rate, 1, 1e8},
    {"--warmup", &Config::warmup_s, 0, 1e6},
};

// If the word is one of `flags`, takes its value into cfg and returns true.
template <typename T, size_t N>
bool TakeNumber(const NumberFlag<T> (&flags)[N], FlagReader& words, Config& cfg) {
  for (const NumberFlag<T>& f : flags) {
    if (words.flag() != f.name) continue;
    cfg.*f.field = Number<T>(words.Value(), f.name, f.min, f.max);
    return true;
  }
  return false;
}

// A HOST:PORT flag's value split into host and port; UsageError naming the
// flag if it is not one.
void SplitEndpointFlag(const std::string& flag, const std::string& endpoint, std::string& host,
                   std::string& port) {
  if (!seqd::client::SplitEndpoint(endpoint, host, port)) {
    throw UsageError{flag + " wants HOST:PORT, got '" + endpoint + "'"};
  }
}

// What the flags said beyond Config: whether a target and --duration were given.
struct Given {
  bool target = false;
  bool duration = false;
};

// What the load goes to: --tcp, --http or --resp HOST:PORT, once.
void TakeTarget(FlagReader& words, Config& cfg, Given& given) {
  const std::string& a = words.flag();
  if (given.target) throw UsageError{"give one of --tcp, --http and --resp"};
  given.target = true;
  cfg.http = a == "--http";
  cfg.resp = a == "--resp";
  cfg.endpoint = words.Value();
  SplitEndpointFlag(a, cfg.endpoint, cfg.host, cfg.port);
}

// Takes one word of the command line (and the flag's value) into cfg;
// --help and --version print and exit.
void TakeFlag(FlagReader& words, Config& cfg, Given& given) {
  const std::string& a = words.flag();
  if (a == "-h" || a == "--help") {
    std::cout << Usage();
    std::exit(0);
  } else if (a == "--version") {
    std::cout << seqd::tools::VersionLine("seqbench") << "\n";
    std::exit(0);
  } else if (a == "--tcp" || a == "--http" || a == "--resp") {
    TakeTarget(words, cfg, given);
  } else if (a == "--also-resp") {
    cfg.also_resp_endpoint = words.Value();
    std::string host, port;
    SplitEndpointFlag(a, cfg.also_resp_endpoint, host, port);
  } else if (a == "--sse") {
    cfg.sse_endpoint = words.Value();
    SplitEndpointFlag(a, cfg.sse_endpoint, cfg.sse_host, cfg.sse_port);
  } else if (a == "--key") {
    cfg.key = words.Value();
  } else if (a == "--new-keys") {
    cfg.new_keys = words.Value();
    if (cfg.new_keys.empty() || cfg.new_keys.size() > 100) {
      throw UsageError{"--new-keys wants a prefix of 1 to 100 bytes"};
    }
  } else if (a == "--snowflake") {
    cfg.snowflake = true;
  } else if (a == "--messages") {
    cfg.messages = words.Value();
    if (cfg.messages.empty() || cfg.messages.size() > 100) {
      throw UsageError{"--messages wants a conversation id of 1 to 100 bytes"};
    }
  } else if (TakeNumber(kIntFlags, words, cfg) || TakeNumber(kRealFlags, words, cfg)) {
  } else if (a == "--payload") {
    cfg.payload = Number<size_t>(words.Value(), "--payload", 16, 1 << 20);
  } else if (a == "--count") {
    cfg.count = Number<uint32_t>(words.Value(), "--count", 1, 0xFFFFFFFFu);
  } else if (a == "--duration") {
    cfg.duration_s = Number<double>(words.Value(), "--duration", 0.001, 1e6);
    given.duration = true;
  } else if (a == "--requests") {
    cfg.requests = Number<int64_t>(words.Value(), "--requests", 1, 1'000'000'000);
  } else if (a == "--json") {
    cfg.json = true;
  } else if (cfg.tls.Parse(a, [&words] { return words.Value(); })) {
  } else if (a == "--token") {
    cfg.token = words.Value();
    if (cfg.token.size() > seqd::proto::kMaxAuthSecret) throw UsageError{"--token is too long"};
  } else {
    throw UsageError{"unexpected argument '" + a + "' (try --help)"};
  }
}

// The flags that go only with others, checked once all are read.
void CheckCombinations(const Config& cfg) {
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
}

Config ParseArgs(int argc, char** argv) {
  Config cfg;
  if (const char* env = std::getenv("SEQD_TOKEN")) cfg.token = env;
  Given given;
  FlagReader words(argc, argv);
  while (words.Next()) TakeFlag(words, cfg, given);
  if (!given.target) {
    throw UsageError{"give --tcp HOST:PORT, --http HOST:PORT or --resp HOST:PORT"};
  }
  if (cfg.requests > 0 && !given.duration) cfg.duration_s = 60;
  cfg.tls.ApplyEnvironment();
  CheckCombinations(cfg);
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

// cfg's endpoint resolved into `out`; false (and a line on stderr) if not.
bool Resolve(tcp::resolver& resolver, const Config& cfg, tcp::resolver::results_type& out) {
  boost::system::error_code ec;
  out = resolver.resolve(cfg.host, cfg.port, ec);
  if (ec) std::cerr << "seqbench: resolve " << cfg.endpoint << ": " << ec.message() << "\n";
  return !ec;
}

// With TLS, the context every connection handshakes with into `out`; false
// (and a line on stderr) if its files cannot be used.
bool MakeTlsContext(const Config& cfg, std::shared_ptr<asio::ssl::context>& out) {
  if (!cfg.tls.enabled) return true;
  try {
    out = seqd::client::detail::MakeTlsClientContext(cfg.tls.ca_file, cfg.tls.cert_file,
                                                     cfg.tls.key_file);
    return true;
  } catch (const std::invalid_argument& e) {
    std::cerr << "seqbench: " << e.what() << "\n";
    return false;
  }
}

// --also-resp: the RESP side's settings, the same run otherwise.
Config AlsoRespConfig(const Config& cfg) {
  Config resp_cfg = cfg;
  resp_cfg.resp = true;
  resp_cfg.endpoint = cfg.also_resp_endpoint;
  seqd::client::SplitEndpoint(resp_cfg.endpoint, resp_cfg.host, resp_cfg.port);
  return resp_cfg;
}

// The run's connections: the load's and, paired (--also-resp), the RESP
// side's. `all` alternates them (binary, RESP, binary, ...), so each tick of
// the pacer serves the two sides in turn.
struct Connections {
  std::vector<std::shared_ptr<BenchConnection>> load, resp, all;
};

Connections MakeConnections(asio::io_context& io, const Config& cfg, const Config* resp_cfg,
                            const tcp::resolver::results_type& endpoints,
                            const tcp::resolver::results_type& resp_endpoints,
                            std::atomic<bool>& stop,
                            const std::shared_ptr<asio::ssl::context>& tls_context) {
  Connections out;
  for (int i = 0; i < cfg.connections; ++i) {
    out.load.push_back(std::make_shared<BenchConnection>(io, cfg, endpoints, stop, tls_context));
    const int64_t share = cfg.requests / cfg.connections + (i < cfg.requests % cfg.connections);
    out.load.back()->SetIndex(i, cfg.requests > 0 ? share : -1);
    out.all.push_back(out.load.back());
    if (resp_cfg == nullptr) continue;
    out.resp.push_back(
        std::make_shared<BenchConnection>(io, *resp_cfg, resp_endpoints, stop, tls_context));
    out.resp.back()->SetIndex(i, -1);
    out.all.push_back(out.resp.back());
  }
  return out;
}

// The I/O threads: they run `io` until Join, which lets it run out of work.
class IoThreads {
 public:
  IoThreads(asio::io_context& io, int n) : work_(asio::make_work_guard(io)) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([&io] { io.run(); });
  }
  ~IoThreads() { Join(); }
  void Join() {
    work_.reset();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

// Until the run ends: every request answered (--requests, a burst) or the
// duration past, whichever comes first.
void WaitForEnd(const Config& cfg, Clock::time_point start, const std::atomic<int64_t>& finished) {
  const auto limit = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(cfg.duration_s));
  if (cfg.requests > 0) {
    while (finished.load(std::memory_order_relaxed) < cfg.requests && Clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else {
    std::this_thread::sleep_until(limit);
  }
}

// After the load: the last pushes, until every one expected has come (5 s
// at most), then 100 ms for any extra.
void WaitForLastPushes(const Config& cfg, const Subscribers& subscribers, int64_t finished) {
  if (subscribers.empty()) return;
  const uint64_t expected =
      static_cast<uint64_t>(finished) * static_cast<uint64_t>(cfg.subscribers);
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (subscribers.pushed.load(std::memory_order_relaxed) < expected && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// Prints the report; the exit status: 0 if every request and push
// succeeded (and, paired, the RESP side's too), else 1.
int Report(const Config& cfg, double elapsed, const Connections& conns,
           const Subscribers& subscribers, const seqd::tools::SchedTimes& sched) {
  const bool paired = !cfg.also_resp_endpoint.empty();
  Stats total, resp_total;
  for (auto& c : conns.load) total.Merge(c->stats());
  for (auto& c : conns.resp) resp_total.Merge(c->stats());
  const seqd::tools::BenchSubscriber::Result pushes = subscribers.Merged();
  PrintReport(cfg, elapsed, total, pushes, sched, paired ? &resp_total : nullptr);
  const bool resp_ok = !paired || (resp_total.errors == 0 && resp_total.requests > 0);
  return total.errors == 0 && pushes.errors == 0 && total.requests > 0 && resp_ok ? 0 : 1;
}

int Run(Config cfg) {
  asio::io_context io(cfg.threads);
  tcp::resolver resolver(io);
  tcp::resolver::results_type endpoints, resp_endpoints;
  if (!Resolve(resolver, cfg, endpoints)) return 1;
  std::shared_ptr<asio::ssl::context> tls_context;
  if (!MakeTlsContext(cfg, tls_context)) return 2;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> finished{0};
  cfg.finished = &finished;
  const bool paired = !cfg.also_resp_endpoint.empty();
  Config resp_cfg = paired ? AlsoRespConfig(cfg) : cfg;
  if (paired && !Resolve(resolver, resp_cfg, resp_endpoints)) return 1;
  const Connections conns = MakeConnections(io, cfg, paired ? &resp_cfg : nullptr, endpoints,
                                            resp_endpoints, stop, tls_context);
  IoThreads threads(io, cfg.threads);
  Subscribers subscribers;
  if (!StartSubscribers(cfg, io, endpoints, subscribers)) {
    std::cerr << "seqbench: the subscribers could not all subscribe within 10 s\n";
    for (const auto& [k, v] : subscribers.Merged().error_kinds) {
      std::cerr << "  " << k << ": " << v << "\n";
    }
    subscribers.Stop();
    threads.Join();
    return 1;
  }

  const seqd::tools::SchedTimes sched_before = seqd::tools::ProcessSchedTimes();
  const Clock::time_point start = Clock::now();
  cfg.start = resp_cfg.start = start;  // read by the connections only once started
  for (auto& c : conns.all) c->Start();
  std::shared_ptr<BenchPacer> pacer;  // --rate only
  if (cfg.rate > 0) {
    pacer = std::make_shared<BenchPacer>(io, PaceGrid::For(cfg.rate, cfg.connections), stop,
                                         conns.all);
    pacer->Start(start);
  }
  WaitForEnd(cfg, start, finished);
  stop = true;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  seqd::tools::SchedTimes sched = seqd::tools::ProcessSchedTimes();  // threads still alive
  sched.cpu_s -= sched_before.cpu_s;
  sched.wait_s -= sched_before.wait_s;
  if (pacer) pacer->Stop();
  for (auto& c : conns.all) c->Stop();
  WaitForLastPushes(cfg, subscribers, finished.load());
  subscribers.Stop();
  threads.Join();
  return Report(cfg, elapsed, conns, subscribers, sched);
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
