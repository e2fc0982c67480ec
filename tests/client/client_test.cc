// seqd client library against a fake binary-protocol server.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "seqd/client.h"

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "fake_server.h"

using namespace std::chrono_literals;
using namespace seqd::client;
using namespace seqd::testing;

namespace {

// What one NextIds call for an ID of "k" answered, and how long it took.
struct TimedResult {
  ClientResult<IdBatch> result;
  std::chrono::steady_clock::duration elapsed;
};
TimedResult TimedNextIds(Client& client) {
  const auto start = std::chrono::steady_clock::now();
  ClientResult<IdBatch> r = client.NextIds("k", 1);
  return {std::move(r), std::chrono::steady_clock::now() - start};
}

}  // namespace

TEST_CASE("blocking NextIds, NextId and Ping") {
  FakeServer server;
  Client client(QuickRetryOptions({server.endpoint()}));
  ClientResult<IdBatch> batch = client.NextIds("order", 5);
  REQUIRE_MESSAGE(batch.ok(), batch.ToString());
  CHECK(batch->count() == 5);
  CHECK(batch->ids() == std::vector<int64_t>{1, 2, 3, 4, 5});
  ClientResult<int64_t> id = client.NextId("order");
  REQUIRE(id.ok());
  CHECK(*id == 6);
  ClientResult<std::chrono::microseconds> rtt = client.Ping();
  REQUIRE_MESSAGE(rtt.ok(), rtt.ToString());
  CHECK(rtt->count() >= 0);
  CHECK(server.pings == 1);
  CHECK(server.connections == 1);
}

TEST_CASE("pipelining: many calls in flight, out-of-order answers matched by request id") {
  // The fake answers only once it holds 50 requests, then in reverse order:
  // a client with one call in flight would time out.
  FakeServer server(FakeOptions{.reorder_batch = 50});
  IoThread io;
  AsyncClient client(io.io.get_executor(), QuickRetryOptions({server.endpoint()}));
  constexpr int kCalls = 200;
  std::mutex mu;
  std::vector<ClientResult<IdBatch>> results(kCalls,
                                             ClientResult<IdBatch>(StatusCode::kInternal, ""));
  std::promise<void> all_done;
  std::atomic<int> remaining{kCalls};
  for (int i = 0; i < kCalls; ++i) {
    // Call i asks for i+1 IDs, so a mismatched answer shows in the count.
    client.NextIds("k", static_cast<uint32_t>(i + 1), [&, i](ClientResult<IdBatch> r) {
      {
        std::lock_guard lock(mu);
        results[i] = std::move(r);
      }
      if (--remaining == 0) all_done.set_value();
    });
  }
  REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
  std::set<int64_t> seen;
  for (int i = 0; i < kCalls; ++i) {
    REQUIRE_MESSAGE(results[i].ok(), results[i].ToString());
    CHECK(results[i]->count() == static_cast<uint64_t>(i + 1));
    for (int64_t id : results[i]->ids()) CHECK(seen.insert(id).second);
  }
  CHECK(server.connections == 1);
  CHECK(server.max_outstanding >= 50);
}

TEST_CASE("max_in_flight_per_connection bounds what is sent; the rest waits in the client") {
  FakeServer server(FakeOptions{.delay_ms = 2});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_in_flight_per_connection = 4;
  IoThread io;
  AsyncClient client(io.io.get_executor(), o);
  constexpr int kCalls = 60;
  std::atomic<int> ok{0}, remaining{kCalls};
  std::promise<void> all_done;
  for (int i = 0; i < kCalls; ++i) {
    client.NextIds("k", 1, [&](ClientResult<IdBatch> r) {
      if (r.ok()) ++ok;
      if (--remaining == 0) all_done.set_value();
    });
  }
  REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
  CHECK(ok == kCalls);
  CHECK(server.max_outstanding <= 4);
  CHECK(server.max_outstanding >= 2);
}

TEST_CASE("per-call timeout when the server never answers") {
  FakeServer server(FakeOptions{.ignore = true});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.call_timeout = 100ms;
  o.max_attempts = 2;
  Client client(o);
  const TimedResult timed = TimedNextIds(client);
  const ClientResult<IdBatch>& r = timed.result;
  const auto elapsed = timed.elapsed;
  CHECK(r.code() == StatusCode::kTimeout);
  CHECK(r.message().find("after 2 attempts") != std::string::npos);
  CHECK(elapsed >= 190ms);
  CHECK(elapsed < 2s);
  CHECK(server.next_ids_requests == 2);
}

TEST_CASE("call_deadline cuts an attempt's timeout to the time left") {
  FakeServer server(FakeOptions{.ignore = true});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.call_timeout = 10s;
  o.max_attempts = 100;
  o.call_deadline = 300ms;
  Client client(o);
  const TimedResult timed = TimedNextIds(client);
  const ClientResult<IdBatch>& r = timed.result;
  const auto elapsed = timed.elapsed;
  CHECK(r.code() == StatusCode::kTimeout);
  CHECK_MESSAGE(r.message().find("call_deadline 300 ms") != std::string::npos, r.message());
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 1500ms);
}

TEST_CASE("call_deadline bounds a call across attempts and backoffs") {
  FakeServer server(FakeOptions{.ignore = true});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.call_timeout = 100ms;
  o.max_attempts = 1000;
  o.backoff_initial = 50ms;
  o.backoff_max = 200ms;
  o.call_deadline = 700ms;
  Client client(o);
  const TimedResult timed = TimedNextIds(client);
  const ClientResult<IdBatch>& r = timed.result;
  const auto elapsed = timed.elapsed;
  CHECK(r.code() == StatusCode::kTimeout);
  CHECK_MESSAGE(r.message().find("call_deadline 700 ms") != std::string::npos, r.message());
  // No attempt starts with under 1 ms left: the call may end that much early.
  CHECK(elapsed >= 699ms);
  CHECK(elapsed < 2s);
  // Several attempts fit, far fewer than max_attempts.
  CHECK(server.next_ids_requests >= 3);
  CHECK(server.next_ids_requests < 20);
}

TEST_CASE("call_deadline: a call retries past max_attempts' usual 3 while time is left") {
  // A takeover as the client sees it: STORE_UNAVAILABLE for a while, then IDs.
  FakeServer server(FakeOptions{.store_unavailable_first = 30});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 1000;
  o.backoff_initial = 1ms;
  o.backoff_max = 5ms;
  o.call_deadline = 5s;
  Client client(o);
  ClientResult<IdBatch> r = client.NextIds("k", 2);
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  CHECK(server.next_ids_requests == 31);
  // The same outage with a deadline too short to ride it out fails in time.
  FakeServer slow(FakeOptions{.store_unavailable_first = 1000});
  o.endpoints = {slow.endpoint()};
  o.call_deadline = 100ms;
  Client short_client(o);
  const auto start = std::chrono::steady_clock::now();
  ClientResult<IdBatch> bad = short_client.NextIds("k", 1);
  CHECK(bad.code() == StatusCode::kTimeout);
  CHECK_MESSAGE(bad.message().find("store down") != std::string::npos, bad.message());
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("default options: a call rides out an outage shorter than call_deadline") {
  // Nothing listens for 1.2 s (connections refused), then a server does.
  const std::string endpoint = ClosedEndpoint();
  const auto port = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  ClientOptions o;
  o.endpoints = {endpoint};
  Client client(o);
  std::unique_ptr<FakeServer> server;
  std::thread later([&server, port] {
    std::this_thread::sleep_for(1200ms);
    server = std::make_unique<FakeServer>(FakeOptions{.port = port});
  });
  const TimedResult timed = TimedNextIds(client);
  later.join();
  REQUIRE_MESSAGE(timed.result.ok(), timed.result.ToString());
  CHECK(timed.elapsed >= 1100ms);
  CHECK(server->next_ids_requests == 1);
  // A call_deadline shorter than the outage ends the call at the deadline.
  o.endpoints = {ClosedEndpoint()};
  o.call_deadline = 300ms;
  Client short_client(o);
  const TimedResult bad = TimedNextIds(short_client);
  CHECK(bad.result.code() == StatusCode::kTimeout);
  CHECK_MESSAGE(bad.result.message().find("call_deadline 300 ms") != std::string::npos,
                bad.result.message());
  CHECK(bad.elapsed >= 299ms);
  CHECK(bad.elapsed < 800ms);
}

TEST_CASE("call_deadline: an attempt the deadline cuts short still reports the error before it") {
  // Attempt 1 is answered "store down" after 200 ms; attempt 2 gets the
  // ~100 ms left and is cut by the deadline while the answer is on its way.
  FakeServer server(FakeOptions{.store_unavailable_first = 1000, .delay_ms = 200});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 1000;
  o.backoff_initial = 1ms;
  o.backoff_max = 1ms;
  o.call_timeout = 5s;
  o.call_deadline = 300ms;
  Client client(o);
  ClientResult<IdBatch> bad = client.NextIds("k", 1);
  CHECK(bad.code() == StatusCode::kTimeout);
  CHECK(server.next_ids_requests == 2);
  CHECK_MESSAGE(bad.message().find("left of call_deadline; before it: ") != std::string::npos,
                bad.message());
  CHECK_MESSAGE(bad.message().find("store down") != std::string::npos, bad.message());
}

TEST_CASE("a stalled endpoint is avoided for a call_timeout: retries do not wait on it again") {
  // A stopped server's kernel still accepts connections: the cluster case
  // of a SIGSTOPped owner while another instance answers STORE_UNAVAILABLE
  // until the takeover. Clients start at a round-robin position: over two,
  // both orders are met.
  for (int i = 0; i < 2; ++i) {
    FakeServer hung(FakeOptions{.ignore = true});
    FakeServer live(FakeOptions{.store_unavailable_first = 4});
    ClientOptions o = QuickRetryOptions({hung.endpoint(), live.endpoint()});
    o.call_timeout = 500ms;
    o.max_attempts = 20;
    o.backoff_initial = 5ms;
    o.backoff_max = 10ms;
    Client client(o);
    const TimedResult timed = TimedNextIds(client);
    const ClientResult<IdBatch>& r = timed.result;
    const auto elapsed = timed.elapsed;
    REQUIRE_MESSAGE(r.ok(), r.ToString());
    CHECK(hung.next_ids_requests <= 1);
    CHECK(elapsed < 1000ms);  // one stall, not two
  }
}

TEST_CASE("call_deadline does not retry what is not retryable") {
  FakeServer server(FakeOptions{.unknown_key = true});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 100;
  o.call_deadline = 2s;
  Client client(o);
  CHECK(client.NextIds("nope", 1).code() == StatusCode::kUnknownKey);
  CHECK(server.next_ids_requests == 1);
}

TEST_CASE("failover: the first endpoint refuses connections, the second serves") {
  FakeServer live;
  const std::string dead = ClosedEndpoint();
  // Clients start at a round-robin position: over two clients, at least one
  // meets the dead endpoint first.
  for (int i = 0; i < 2; ++i) {
    Client client(QuickRetryOptions({dead, live.endpoint()}));
    for (int j = 0; j < 5; ++j) {
      ClientResult<IdBatch> r = client.NextIds("k", 2);
      REQUIRE_MESSAGE(r.ok(), r.ToString());
      CHECK(r->count() == 2);
    }
  }
  CHECK(live.next_ids_requests == 10);
}

TEST_CASE("failover: an endpoint that accepts and hangs up is tried, then the next serves") {
  FakeServer flaky(FakeOptions{.close_on_accept = true});
  FakeServer live;
  for (int i = 0; i < 2; ++i) {
    Client client(QuickRetryOptions({flaky.endpoint(), live.endpoint()}));
    ClientResult<IdBatch> r = client.NextIds("k", 1);
    REQUIRE_MESSAGE(r.ok(), r.ToString());
  }
  CHECK(flaky.connections >= 1);
  CHECK(live.next_ids_requests == 2);
}

TEST_CASE("SHUTTING_DOWN: the call moves to the next endpoint") {
  FakeServer draining(FakeOptions{.shutting_down = true});
  FakeServer live;
  for (int i = 0; i < 2; ++i) {
    Client client(QuickRetryOptions({draining.endpoint(), live.endpoint()}));
    for (int j = 0; j < 3; ++j) {
      ClientResult<IdBatch> r = client.NextIds("k", 1);
      REQUIRE_MESSAGE(r.ok(), r.ToString());
    }
  }
  CHECK(draining.next_ids_requests >= 1);
  CHECK(live.next_ids_requests == 6);
}

TEST_CASE("no endpoint reachable: UNAVAILABLE after max_attempts") {
  ClientOptions o = QuickRetryOptions({ClosedEndpoint(), ClosedEndpoint()});
  o.max_attempts = 3;
  Client client(o);
  ClientResult<IdBatch> r = client.NextIds("k", 1);
  CHECK(r.code() == StatusCode::kUnavailable);
  CHECK(r.message().find("after 3 attempts") != std::string::npos);
}

TEST_CASE("connection lost mid-call: retried on a new connection") {
  FakeServer server(FakeOptions{.drop_first = 1});
  Client client(QuickRetryOptions({server.endpoint()}));
  ClientResult<IdBatch> r = client.NextIds("k", 1);
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  CHECK(server.connections == 2);
  CHECK(server.next_ids_requests == 2);
}

TEST_CASE("STORE_UNAVAILABLE is retried with backoff, then succeeds") {
  FakeServer server(FakeOptions{.store_unavailable_first = 2});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 3;
  o.backoff_initial = 20ms;
  o.backoff_max = 100ms;
  Client client(o);
  const TimedResult timed = TimedNextIds(client);
  const ClientResult<IdBatch>& r = timed.result;
  const auto elapsed = timed.elapsed;
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  CHECK(server.next_ids_requests == 3);
  // Two backoffs: at least 10 ms + 20 ms with jitter in [base/2, base].
  CHECK(elapsed >= 30ms);
}

TEST_CASE("STORE_UNAVAILABLE on every attempt is reported") {
  FakeServer server(FakeOptions{.store_unavailable_first = 100});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 2;
  Client client(o);
  ClientResult<IdBatch> r = client.NextIds("k", 1);
  CHECK(r.code() == StatusCode::kStoreUnavailable);
  CHECK(server.next_ids_requests == 2);
}

TEST_CASE("UNKNOWN_KEY is not retried") {
  FakeServer server(FakeOptions{.unknown_key = true});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 5;
  Client client(o);
  ClientResult<IdBatch> r = client.NextIds("nope", 1);
  CHECK(r.code() == StatusCode::kUnknownKey);
  CHECK(r.message().find("unknown key 'nope'") != std::string::npos);
  CHECK(server.next_ids_requests == 1);
  CHECK_THROWS_AS(r.value(), std::logic_error);
}

TEST_CASE("prefetch: count==1 served from a local batch, refilled when half used") {
  FakeServer server;
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.prefetch = 100;
  Client client(o);
  std::vector<int64_t> ids;
  for (int i = 0; i < 120; ++i) {
    ClientResult<int64_t> r = client.NextId("p");
    REQUIRE_MESSAGE(r.ok(), r.ToString());
    ids.push_back(*r);
  }
  // One server: batches arrive in order, so the IDs increase.
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i] > ids[i - 1]);
  // 120 IDs in batches of 100: the first fetch, a refill at half, maybe one more.
  CHECK(server.next_ids_requests >= 2);
  CHECK(server.next_ids_requests <= 3);
  CHECK(server.last_count == 100);
  // count > 1 bypasses the local batch.
  ClientResult<IdBatch> b = client.NextIds("p", 7);
  REQUIRE(b.ok());
  CHECK(b->count() == 7);
  CHECK(server.last_count == 7);
}

TEST_CASE("prefetch: concurrent NextId calls wait for the first batch and stay unique") {
  FakeServer server(FakeOptions{.delay_ms = 5});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.prefetch = 16;
  Client client(o);
  std::mutex mu;
  std::set<int64_t> seen;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        ClientResult<int64_t> r = client.NextId("q");
        if (!r.ok()) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mu);
        if (!seen.insert(*r).second) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(seen.size() == 200);
  CHECK(server.next_ids_requests <= 200 / 16 + 3);
}

TEST_CASE("blocking API from several threads at once") {
  FakeServer server;
  Client client(QuickRetryOptions({server.endpoint()}));
  constexpr int kThreads = 8, kCalls = 200;
  std::mutex mu;
  std::set<int64_t> seen;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        ClientResult<IdBatch> r = client.NextIds("m", 3);
        if (!r.ok() || r->count() != 3) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mu);
        for (int64_t id : r->ids()) {
          if (!seen.insert(id).second) ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(seen.size() == kThreads * kCalls * 3);
  CHECK(server.connections == 1);
}

TEST_CASE("Close cancels pending calls and rejects later ones") {
  FakeServer server(FakeOptions{.ignore = true});
  IoThread io;
  AsyncClient client(io.io.get_executor(), QuickRetryOptions({server.endpoint()}));
  std::promise<ClientResult<IdBatch>> first, later;
  client.NextIds("k", 1, [&](ClientResult<IdBatch> r) { first.set_value(std::move(r)); });
  while (server.next_ids_requests == 0) std::this_thread::sleep_for(1ms);
  client.Close();
  client.NextIds("k", 1, [&](ClientResult<IdBatch> r) { later.set_value(std::move(r)); });
  auto f1 = first.get_future();
  auto f2 = later.get_future();
  REQUIRE(f1.wait_for(5s) == std::future_status::ready);
  REQUIRE(f2.wait_for(5s) == std::future_status::ready);
  CHECK(f1.get().code() == StatusCode::kCancelled);
  CHECK(f2.get().code() == StatusCode::kCancelled);
}

TEST_CASE("bad options are rejected") {
  CHECK_THROWS_AS(Client(ClientOptions{}), std::invalid_argument);
  CHECK_THROWS_AS(Client(QuickRetryOptions({"localhost"})), std::invalid_argument);
  CHECK_THROWS_AS(Client(QuickRetryOptions({"localhost:99999"})), std::invalid_argument);
  ClientOptions o = QuickRetryOptions({"127.0.0.1:1"});
  o.max_attempts = -1;
  CHECK_THROWS_AS(Client{o}, std::invalid_argument);
  o.max_attempts = 0;  // no cap: needs a call_deadline
  o.call_deadline = 0ms;
  CHECK_THROWS_AS(Client{o}, std::invalid_argument);
  o.call_deadline = 1000ms;
  CHECK_NOTHROW(Client{o});
  o.max_attempts = 3;
  o.call_deadline = -1ms;
  CHECK_THROWS_AS(Client{o}, std::invalid_argument);
  CHECK_NOTHROW(Client(QuickRetryOptions({"[::1]:7070", "localhost:7070"})));
}

TEST_CASE("status names") {
  CHECK(seqd::client::StatusCodeName(StatusCode::kOk) == "OK");
  CHECK(seqd::client::StatusCodeName(StatusCode::kUnknownKey) == "UNKNOWN_KEY");
  CHECK(seqd::client::StatusCodeName(StatusCode::kTimeout) == "TIMEOUT");
  CHECK(ClientResult<int64_t>(StatusCode::kUnavailable, "x").ToString() == "UNAVAILABLE: x");
}

TEST_CASE("SplitEndpoint takes host:port and [v6]:port, nothing else") {
  std::string host, port;
  CHECK(seqd::client::SplitEndpoint("127.0.0.1:7070", host, port));
  CHECK(host == "127.0.0.1");
  CHECK(port == "7070");
  CHECK(seqd::client::SplitEndpoint("[::1]:80", host, port));
  CHECK(host == "::1");
  CHECK(port == "80");
  for (const char* bad :
       {"", "host", "host:", ":80", "::1:80", "[::1]80", "h:0", "h:65536", "h:12a", "h:123456"}) {
    CHECK_MESSAGE(!seqd::client::SplitEndpoint(bad, host, port), bad);
  }
}
