// BinaryServer's limits and a connection's life over real loopback sockets
// (tests/unit/binary_test_client.h): the in-flight cap (with NEXT_IDS runs),
// back-pressure, the idle timeout, a client's EOF, Stop() and the
// connection cap.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "proto/binary_codec.h"
#include "server/binary/binary_server.h"
#include "tests/unit/binary_test_client.h"

using namespace seqd;
using namespace seqd::binarytest;

TEST_CASE("binary: at most max_in_flight requests are taken from a connection") {
  BinaryServerOptions o;
  o.max_in_flight = 4;
  ServerFixture f(o);
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("held", 1000, "").ok());
  REQUIRE(f.mem.CreateKey("held2", 1000, "").ok());
  f.store.SetHold(true);  // the first reservation of a fresh key blocks

  Client c(f.server.port());
  REQUIRE(c.connected());
  std::string batch;
  constexpr uint32_t kRequests = 100;
  // Two keys in turn: no two requests in a row form a run (one take for
  // several requests), so each request taken parks on its own.
  for (uint32_t i = 0; i < kRequests; ++i) {
    proto::AppendNextIdsRequest(batch, i, i % 2 ? "held2" : "held", 1);
  }
  c.Send(batch);

  REQUIRE(WaitFor([&] { return f.allocator.stats().parked_now == 4; }));
  std::this_thread::sleep_for(300ms);
  CHECK(f.allocator.stats().parked_now == 4);  // the other 96 were not read
  CHECK(f.store.reserve_calls() <= 2);

  f.store.SetHold(false);
  std::set<uint32_t> answered;
  std::set<std::pair<bool, int64_t>> ids;  // (key, ID)
  for (uint32_t i = 0; i < kRequests; ++i) {
    std::optional<Frame> r = c.Read();
    REQUIRE(r);
    answered.insert(r->request_id);
    auto ranges = r->ranges();
    REQUIRE(ranges.size() == 1);
    ids.emplace(r->request_id % 2 == 1, ranges[0].first);
  }
  CHECK(answered.size() == kRequests);
  CHECK(ids.size() == kRequests);
  CHECK(f.allocator.stats().parked_now == 0);
}

TEST_CASE("binary: a run of one key's requests counts each request against max_in_flight") {
  BinaryServerOptions o;
  o.max_in_flight = 4;
  ServerFixture f(o);
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("held", 1000, "").ok());
  f.store.SetHold(true);

  Client c(f.server.port());
  REQUIRE(c.connected());
  std::string batch;
  constexpr uint32_t kRequests = 100;
  for (uint32_t i = 0; i < kRequests; ++i) proto::AppendNextIdsRequest(batch, i, "held", 1);
  proto::AppendFrame(batch, proto::Opcode::kPing, 0, 1000, "after");
  c.Send(batch);
  // The first 4 requests parked as one take of 4 IDs; the other 96 and the
  // PING unread (were a run's requests not counted as gathered, all 100
  // would join it, and the PING after them be answered at once).
  REQUIRE(WaitFor([&] { return f.allocator.stats().parked_now == 1; }));
  CHECK_FALSE(c.Read(300ms));
  CHECK(f.allocator.stats().parked_now == 1);
  f.store.SetHold(false);
  std::set<int64_t> ids;
  for (uint32_t i = 0; i <= kRequests; ++i) {
    std::optional<Frame> r = c.Read();
    REQUIRE(r);
    if (r->request_id == 1000) continue;  // the PING's answer
    auto ranges = r->ranges();
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].first == ranges[0].last);
    ids.insert(ranges[0].first);
    // The parked run's requests were the first four, and got IDs 1-4.
    if (r->request_id < 4) CHECK(ranges[0].first <= 4);
  }
  CHECK(ids.size() == kRequests);
  CHECK(*ids.rbegin() == kRequests);  // 1..100: none lost, none twice
}

TEST_CASE("binary: backpressure also holds for requests answered at once") {
  // A client that pipelines pings and never reads: the server stops reading
  // instead of buffering responses without bound.
  BinaryServerOptions o;
  o.max_in_flight = 8;
  ServerFixture f(o);
  REQUIRE(f.listening);
  Client c(f.server.port());
  REQUIRE(c.connected());
  const std::string ping = Ping(1, std::string(1000, 'x'));
  std::string batch;
  for (int i = 0; i < 2000; ++i) batch += ping;  // ~2 MB of requests and responses
  std::thread writer = c.SendInBackground(batch);
  std::this_thread::sleep_for(300ms);
  // Now read everything: all 2000 come back.
  int n = 0;
  while (n < 2000) {
    std::optional<Frame> r = c.Read();
    if (!r) break;
    ++n;
  }
  writer.join();
  CHECK(n == 2000);
}

TEST_CASE("binary: idle connections are closed at the idle timeout") {
  BinaryServerOptions o;
  o.idle_timeout = 1s;
  ServerFixture f(o);
  REQUIRE(f.listening);

  CheckSilentConnectionClosedAtOneSecond<Client>(f.server.port());

  // Idle after a response.
  Client used(f.server.port());
  CHECK(RoundTrip(used, Ping(1, "a")).result() == "a");
  const auto start = SteadyClock::now();
  CHECK(used.WaitClosed(4s));
  CHECK(SteadyClock::now() - start >= 900ms);

  // Activity keeps a connection open past the timeout.
  Client busy(f.server.port());
  for (int i = 0; i < 8; ++i) {
    CHECK(RoundTrip(busy, Ping(i, "b")).result() == "b");
    std::this_thread::sleep_for(300ms);
  }

  // A request in flight is not idleness.
  REQUIRE(f.mem.CreateKey("slow", 10, "").ok());
  f.store.SetHold(true);
  Client waiting(f.server.port());
  waiting.Send(NextIds(1, "slow", 1));
  CHECK_FALSE(waiting.WaitClosed(2500ms));
  f.store.SetHold(false);
  std::optional<Frame> r = waiting.Read();
  REQUIRE(r);
  CHECK(r->status() == WireStatus::kOk);
  CHECK(waiting.WaitClosed(4s));  // idle again afterwards
  CHECK(WaitFor([&] { return f.server.open_connections() == 0; }));
}

TEST_CASE("binary: a client's EOF still gets the answers in flight") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  f.store.SetHold(true);
  Client c(f.server.port());
  c.Send(NextIds(1, "k", 2) + Ping(2, "p"));
  c.ShutdownSend();
  std::optional<Frame> ping = c.Read();
  REQUIRE(ping);
  CHECK(ping->request_id == 2);
  f.store.SetHold(false);
  std::optional<Frame> ids = c.Read();
  REQUIRE(ids);
  CHECK(ids->ranges() == std::vector<proto::IdRangeWire>{{1, 2}});
  CHECK(c.WaitClosed());
}

TEST_CASE("binary: Stop() closes idle connections and lets in-flight requests finish") {
  ServerFixture f(EachIoLayout(BinaryServerOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  const uint16_t port = f.server.port();

  Client idle(port);
  CHECK(RoundTrip(idle, Ping(1, "i")).result() == "i");

  f.store.SetHold(true);
  Client busy(port);
  busy.Send(NextIds(5, "k", 3));
  REQUIRE(WaitFor([&] { return f.store.reserve_calls() >= 1; }));

  std::future<void> drained_future = StopWithOneInFlight(f, idle);

  f.store.SetHold(false);
  std::optional<Frame> r = busy.Read();
  REQUIRE(r);
  CHECK(r->request_id == 5);
  CHECK(r->ranges() == std::vector<proto::IdRangeWire>{{1, 3}});
  CheckStopFinishes(f, busy, drained_future);
}

TEST_CASE("binary: connections beyond max_connections are closed") {
  BinaryServerOptions o;
  o.max_connections = 1;
  ServerFixture f(o);
  REQUIRE(f.listening);
  {
    Client first(f.server.port());
    CHECK(RoundTrip(first, Ping(1, "1")).result() == "1");
    REQUIRE(f.server.open_connections() == 1);

    Client second(f.server.port());
    second.Send(Ping(2, "2"));
    CHECK(second.WaitClosed());
    CHECK(RoundTrip(first, Ping(3, "3")).result() == "3");
  }
  // Once the first is gone, a new one is served.
  REQUIRE(WaitFor([&] { return f.server.open_connections() == 0; }));
  Client third(f.server.port());
  CHECK(RoundTrip(third, Ping(4, "4")).result() == "4");
}
