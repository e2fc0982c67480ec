// What seqbench's files share: the run's settings (the command line) and the
// counts each connection keeps. seqbench.cc parses the flags and runs the
// load; bench_connection.* are the connections that send it,
// bench_subscriber.* the --subscribe connections, bench_report.* the report.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "bench_histogram.h"
#include "mini_http.h"
#include "tool_flags.h"

namespace seqd::bench {

using Clock = std::chrono::steady_clock;
using tools::Histogram;

// A bad command line (tool_flags.h): seqbench prints the message and exits 2.
using tools::UsageError;

// One connection's counts; merged into the run's at the end. Not
// thread-safe: each connection's own, read once the I/O threads are done.
struct Stats {
  uint64_t requests = 0;         // answered
  uint64_t warmup_requests = 0;  // answered, sent during --warmup (not in latency)
  uint64_t ids = 0;
  uint64_t errors = 0;
  uint64_t unanswered = 0;  // in flight when the run stopped: in no figure
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
    unanswered += o.unanswered;
    for (const auto& [k, v] : o.error_kinds) error_kinds[k] += v;
    latency.Merge(o.latency);
  }
};

// The run's settings. Written before the connections start (start: just
// before), read-only while they run.
struct Config {
  bool http = false;
  bool resp = false;  // --resp: RESP2 INCR (INCRBY with --count) instead of the binary protocol
  std::string host, port, endpoint;
  // --also-resp HOST:PORT: as many RESP connections again, INCR of the same
  // key on this endpoint, paced by the same clock at the same rate, and
  // reported apart (a paired comparison of the binary protocol and RESP
  // that meets the same stalls of the load generator); "" for none.
  std::string also_resp_endpoint;
  std::string key;
  std::string new_keys;    // --new-keys PREFIX; "" for one key
  bool snowflake = false;  // SNOWFLAKE / GET /snowflake instead of a key's IDs
  std::string messages;    // --messages CONV: SEND messages instead of asking for IDs
  int convs = 1;           // --convs N: CONV_0 .. CONV_{N-1}; 1: CONV itself
  size_t payload = 100;    // --payload B: message payload bytes
  int subscribers = 0;     // --subscribe N: subscriber connections measuring pushes
  std::string sse_endpoint, sse_host, sse_port;  // --sse HOST:PORT: SSE streams instead
  std::string run_id;                            // makes client_msg_ids unique across runs
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
  tools::TlsFlags tls;
};

}  // namespace seqd::bench
