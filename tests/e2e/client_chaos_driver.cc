// client_chaos_driver: the C++ client library (seqd::client::Client) as an
// application drives it, for tests/e2e/test_client_chaos.py. N threads share
// one Client and call NextIds(key, count) in a loop (a random key of --keys,
// a random count 1..--max-count) until stdin reaches end of file (the test
// closes the pipe; if the test dies, the driver stops too); the calls in
// flight then finish and the driver exits 0.
//
// Every call is one line on stdout (or --out), written whole under a lock:
//   T KEY COUNT SEND_NS RECV_NS ok FIRST-LAST[,FIRST-LAST...]
//   T KEY COUNT SEND_NS RECV_NS err CODE MESSAGE...
// T is the thread number; SEND_NS and RECV_NS are CLOCK_MONOTONIC
// nanoseconds (std::chrono::steady_clock on Linux), read just before the
// call and just after it returned, so they compare with other processes'
// monotonic times (the Go driver's, the test's time.monotonic()).
//
// Options (the client's retry settings; times in milliseconds):
//   --endpoints H:P,H:P,...  --keys K1,K2,...  --threads N  --max-count N
//   --call-deadline MS  --call-timeout MS  --max-attempts N
//   --backoff-initial MS  --backoff-max MS  --route-by-shard  --seed N
//   --pause-us US (a thread's pause between calls)  --out PATH
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seqd/client.h"

namespace {

using seqd::client::ClientOptions;

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Config {
  ClientOptions client;
  std::vector<std::string> keys;
  int threads = 4;
  uint32_t max_count = 10;
  uint64_t seed = 1;
  std::chrono::microseconds pause{0};  // between a thread's calls
  std::string out;
};

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "client_chaos_driver: " << why << "\n"
            << "usage: client_chaos_driver --endpoints H:P,... --keys K,... [--threads N]\n"
               "  [--max-count N] [--call-deadline MS] [--call-timeout MS] [--max-attempts N]\n"
               "  [--backoff-initial MS] [--backoff-max MS] [--route-by-shard] [--seed N]\n"
               "  [--pause-us US] [--out PATH]\n";
  std::exit(2);
}

Config Parse(int argc, char** argv) {
  Config c;
  c.client.call_deadline = std::chrono::milliseconds(5000);
  c.client.call_timeout = std::chrono::milliseconds(1500);
  c.client.max_attempts = 1000;
  c.client.backoff_initial = std::chrono::milliseconds(20);
  c.client.backoff_max = std::chrono::milliseconds(250);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--route-by-shard") {
      c.client.route_by_shard = true;
      continue;
    }
    if (i + 1 >= argc) Usage("missing value of " + a);
    const std::string v = argv[++i];
    auto ms = [&] { return std::chrono::milliseconds(std::stoll(v)); };
    if (a == "--endpoints") {
      c.client.endpoints = Split(v);
    } else if (a == "--keys") {
      c.keys = Split(v);
    } else if (a == "--threads") {
      c.threads = std::stoi(v);
    } else if (a == "--max-count") {
      c.max_count = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--call-deadline") {
      c.client.call_deadline = ms();
    } else if (a == "--call-timeout") {
      c.client.call_timeout = ms();
    } else if (a == "--max-attempts") {
      c.client.max_attempts = std::stoi(v);
    } else if (a == "--backoff-initial") {
      c.client.backoff_initial = ms();
    } else if (a == "--backoff-max") {
      c.client.backoff_max = ms();
    } else if (a == "--pause-us") {
      c.pause = std::chrono::microseconds(std::stoll(v));
    } else if (a == "--seed") {
      c.seed = std::stoull(v);
    } else if (a == "--out") {
      c.out = v;
    } else {
      Usage("unknown option " + a);
    }
  }
  if (c.client.endpoints.empty() || c.keys.empty()) Usage("--endpoints and --keys are required");
  if (c.threads < 1 || c.max_count < 1) Usage("--threads and --max-count must be >= 1");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = Parse(argc, argv);
  } catch (const std::exception& e) {
    Usage(std::string("bad number: ") + e.what());
  }
  FILE* out = stdout;
  if (!cfg.out.empty()) {
    out = std::fopen(cfg.out.c_str(), "w");
    if (out == nullptr) Usage("cannot write " + cfg.out + ": " + std::strerror(errno));
  }
  seqd::client::Client client(cfg.client);
  std::mutex out_mu;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < cfg.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(cfg.seed * 1000003 + static_cast<uint64_t>(t));
      std::uniform_int_distribution<size_t> pick_key(0, cfg.keys.size() - 1);
      std::uniform_int_distribution<uint32_t> pick_count(1, cfg.max_count);
      std::string line;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string& key = cfg.keys[pick_key(rng)];
        const uint32_t count = pick_count(rng);
        const int64_t send = MonotonicNs();
        seqd::client::ClientResult<seqd::client::IdBatch> r = client.NextIds(key, count);
        const int64_t recv = MonotonicNs();
        line = std::to_string(t) + " " + key + " " + std::to_string(count) + " " +
               std::to_string(send) + " " + std::to_string(recv);
        if (r.ok()) {
          line += " ok ";
          for (size_t i = 0; i < r->ranges.size(); ++i) {
            if (i > 0) line += ",";
            line += std::to_string(r->ranges[i].first) + "-" + std::to_string(r->ranges[i].last);
          }
        } else {
          std::string message = r.message();
          for (char& ch : message) {
            if (ch == '\n' || ch == '\r') ch = ' ';
          }
          line += " err " + std::string(seqd::client::StatusCodeName(r.code())) + " " + message;
        }
        line += "\n";
        {
          std::lock_guard<std::mutex> lock(out_mu);
          std::fwrite(line.data(), 1, line.size(), out);
        }
        if (cfg.pause.count() > 0) std::this_thread::sleep_for(cfg.pause);
      }
    });
  }
  // Until the test closes our stdin.
  char buf[256];
  while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  std::fflush(out);
  if (out != stdout) std::fclose(out);
  return 0;
}
