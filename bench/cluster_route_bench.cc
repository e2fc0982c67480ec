// cluster_route_bench: closed-loop load through the C++ client library on a
// cluster, with and without routing by shard (ClientOptions::route_by_shard).
// Each of --workers keeps one call in flight: NEXT_IDS of a random key among
// --keys (or SEND to a random conversation with --send), for --seconds.
// Prints one JSON line: calls, calls/s, errors. Read the servers'
// seqd_cluster_forwards_total before and after to see how many were
// forwarded (bench/cluster_bench.sh does).
//
//   cluster_route_bench --endpoints H:P[,H:P...] [--route] [--send]
//                       [--keys 64] [--workers 64] [--seconds 5] [--prefix ck]
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seqd/client.h"

namespace {

struct Config {
  std::vector<std::string> endpoints;
  bool route = false;
  bool send = false;
  int keys = 64;
  int workers = 64;
  double seconds = 5;
  std::string prefix = "ck";
};

Config Parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--endpoints") {
      std::stringstream ss(next());
      for (std::string e; std::getline(ss, e, ',');) c.endpoints.push_back(e);
    } else if (a == "--route") {
      c.route = true;
    } else if (a == "--send") {
      c.send = true;
    } else if (a == "--keys") {
      c.keys = std::stoi(next());
    } else if (a == "--workers") {
      c.workers = std::stoi(next());
    } else if (a == "--seconds") {
      c.seconds = std::stod(next());
    } else if (a == "--prefix") {
      c.prefix = next();
    } else {
      throw std::invalid_argument("unknown argument " + a);
    }
  }
  if (c.endpoints.empty() || c.keys < 1 || c.workers < 1) {
    throw std::invalid_argument("need --endpoints, --keys >= 1, --workers >= 1");
  }
  return c;
}

// One closed loop: the next call starts when the previous one answers.
struct Worker : std::enable_shared_from_this<Worker> {
  Worker(seqd::client::AsyncClient& client, const Config& cfg, std::atomic<bool>& stop, int id)
      : client(client), cfg(cfg), stop(stop), rng(static_cast<unsigned>(id) * 7919u + 1) {}

  void Next() {
    if (stop) return;
    std::string key = cfg.prefix;  // appended, not `a + b`: GCC 12 -Wrestrict false alarm
    key += std::to_string(rng() % cfg.keys);
    auto self = shared_from_this();
    if (cfg.send) {
      seqd::client::OutgoingMessage m;
      m.conv_id = key;
      m.sender_id = "bench";
      m.client_msg_id = std::to_string(reinterpret_cast<uintptr_t>(this));
      m.client_msg_id += '-';
      m.client_msg_id += std::to_string(calls + errors);
      m.payload.assign(1, 'x');
      client.Send(std::move(m), [self](seqd::client::ClientResult<seqd::client::SendResult> r) {
        self->Done(r.ok());
      });
    } else {
      client.NextIds(key, 1, [self](seqd::client::ClientResult<seqd::client::IdBatch> r) {
        self->Done(r.ok());
      });
    }
  }
  void Done(bool ok) {
    ok ? ++calls : ++errors;
    Next();
  }

  seqd::client::AsyncClient& client;
  const Config& cfg;
  std::atomic<bool>& stop;
  std::minstd_rand rng;
  uint64_t calls = 0, errors = 0;  // on the client's strand only
};

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = Parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_route_bench: %s\n", e.what());
    return 2;
  }
  boost::asio::io_context io(1);
  auto work = boost::asio::make_work_guard(io);
  std::thread thread([&io] { io.run(); });
  seqd::client::ClientOptions o;
  o.endpoints = cfg.endpoints;
  o.route_by_shard = cfg.route;
  o.call_timeout = std::chrono::milliseconds(3000);
  seqd::client::AsyncClient client(io.get_executor(), o);
  std::atomic<bool> stop{false};
  std::vector<std::shared_ptr<Worker>> workers;
  for (int i = 0; i < cfg.workers; ++i) {
    workers.push_back(std::make_shared<Worker>(client, cfg, stop, i));
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto& w : workers) w->Next();
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let calls in flight end
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  client.Close();
  work.reset();
  io.stop();
  thread.join();
  uint64_t calls = 0, errors = 0;
  for (auto& w : workers) {
    calls += w->calls;
    errors += w->errors;
  }
  std::printf("{\"route\":%s,\"op\":\"%s\",\"calls\":%llu,\"calls_per_s\":%.0f,\"errors\":%llu}\n",
              cfg.route ? "true" : "false", cfg.send ? "send" : "next_ids",
              static_cast<unsigned long long>(calls), static_cast<double>(calls) / elapsed,
              static_cast<unsigned long long>(errors));
  return errors == 0 ? 0 : 1;
}
