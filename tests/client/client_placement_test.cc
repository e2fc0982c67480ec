// Store groups in the client library (docs/cluster.md, "Store groups"):
// with watch_placement each connection asks for the placement version's
// pushes, which are recorded (PlacementVersion(), on_placement_version); a
// rise refreshes the shard map of a client that routes by shard;
// ClientOptions::placement_version is told to each connection once per
// rise, ahead of the request that follows it; a client that does not watch
// sends nothing new. Against the fake server.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "fake_server.h"
#include "proto/cluster_codec.h"
#include "seqd/client.h"

using namespace std::chrono_literals;
using namespace seqd::client;
using namespace seqd::testing;

namespace {

constexpr uint8_t kPlacement = 0x42;
constexpr uint8_t kNextIds = 0x02;

template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The PLACEMENT requests the fake received: the versions told, in order.
std::vector<int64_t> Told(FakeServer& server) {
  std::vector<int64_t> out;
  for (const auto& [opcode, version] : server.Received()) {
    if (opcode == kPlacement) out.push_back(version);
  }
  return out;
}

}  // namespace

TEST_CASE("placement: the client records the highest version a server pushes before its answers") {
  FakeServer server(FakeOptions{.store_groups = true});
  std::mutex mu;
  std::vector<int64_t> seen;  // on_placement_version's calls
  ClientOptions options = QuickRetryOptions({server.endpoint()});
  options.watch_placement = true;
  options.on_placement_version = [&](int64_t v) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(v);
  };
  Client client(options);
  REQUIRE(client.NextIds("k", 1).ok());
  CHECK(client.PlacementVersion() == 0);  // nothing pushed yet

  server.placement = 5;
  REQUIRE(client.NextIds("k", 1).ok());
  // The push came before the answer: recorded once the call returns.
  CHECK(client.PlacementVersion() == 5);
  CHECK(client.async().PlacementVersion() == 5);
  server.placement = 9;
  REQUIRE(client.Ping().ok());
  CHECK(client.PlacementVersion() == 9);
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 2;
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    CHECK(seen == std::vector<int64_t>{5, 9});
  }

  // Pushes that do not parse (a version below 0, a short payload) are
  // ignored; the connection and the version stay.
  {
    std::string frames;
    seqd::proto::AppendFrame(frames, seqd::proto::kOpPlacement, 0x0003, 0,
                             std::string("\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 10));
    seqd::proto::AppendFrame(frames, seqd::proto::kOpPlacement, 0x0003, 0,
                             std::string("\0\0\0", 3));
    server.PushRaw(frames);
    REQUIRE(client.Ping().ok());
    CHECK(client.PlacementVersion() == 9);
    CHECK(server.connections == 1);
  }

  // Another server behind this one (a new connection told a lower
  // version): the highest stays.
  FakeServer behind(FakeOptions{.store_groups = true});
  behind.placement = 7;
  ClientOptions two = QuickRetryOptions({behind.endpoint()});
  two.watch_placement = true;
  Client other(two);
  REQUIRE(other.NextIds("k", 1).ok());
  CHECK(other.PlacementVersion() == 7);
  CHECK(client.PlacementVersion() == 9);
}

TEST_CASE("placement: a rise refreshes the shard map of a client that routes by shard") {
  FakeServer server(FakeOptions{.store_groups = true});
  ClientOptions options = QuickRetryOptions({server.endpoint()});
  options.route_by_shard = true;
  Client client(options);
  REQUIRE(client.NextIds("k", 1).ok());  // the first keyed call fetches the map
  REQUIRE(Eventually([&] { return server.cluster_map_requests == 1; }));
  std::this_thread::sleep_for(150ms);  // past the client's least interval between fetches
  REQUIRE(client.NextIds("k", 1).ok());
  std::this_thread::sleep_for(50ms);
  CHECK(server.cluster_map_requests == 1);  // no rise: the map is kept

  server.placement = 3;
  REQUIRE(client.NextIds("k", 1).ok());
  CHECK(Eventually([&] { return server.cluster_map_requests == 2; }));
  CHECK(client.PlacementVersion() == 3);
}

TEST_CASE("placement: placement_version is told to each connection once per rise, first") {
  FakeServer server(FakeOptions{.store_groups = true});
  server.placement = 11;  // what the server answers (and pushes)
  std::atomic<int64_t> mine{0};
  ClientOptions options = QuickRetryOptions({server.endpoint()});
  options.placement_version = [&] { return mine.load(); };
  Client client(options);
  REQUIRE(client.NextIds("k", 1).ok());
  // The connection asked for the pushes first (telling 0: nothing yet).
  CHECK(Told(server) == std::vector<int64_t>{0});
  CHECK(server.Received().front().first == kPlacement);

  mine = 4;
  REQUIRE(client.NextIds("k", 1).ok());
  REQUIRE(client.NextIds("k", 1).ok());
  CHECK(Told(server) == std::vector<int64_t>{0, 4});
  // Told ahead of the request that followed the rise.
  const auto received = server.Received();
  size_t told_at = 0;
  for (size_t i = 0; i < received.size(); ++i) {
    if (received[i].first == kPlacement) told_at = i;
  }
  REQUIRE(told_at + 1 < received.size());
  CHECK(received[told_at + 1].first == kNextIds);

  mine = 6;
  REQUIRE(client.Ping().ok());
  CHECK(Told(server) == std::vector<int64_t>{0, 4, 6});
  CHECK(client.PlacementVersion() == 11);  // the server's own, pushed and answered
}

TEST_CASE("placement: a client that does not watch the placement asks nothing and hears nothing") {
  FakeServer server(FakeOptions{.store_groups = true});
  server.placement = 5;
  Client client(QuickRetryOptions({server.endpoint()}));
  for (int i = 0; i < 3; ++i) REQUIRE(client.NextIds("k", 1).ok());
  for (const auto& [opcode, version] : server.Received()) CHECK(opcode == kNextIds);
  CHECK(client.PlacementVersion() == 0);  // pushed only to connections that asked
}

TEST_CASE("placement: a server without PLACEMENT answers it UNKNOWN_OPCODE and calls go on") {
  FakeServer server;  // no store groups: PLACEMENT is an unknown opcode
  std::atomic<int64_t> mine{2};
  ClientOptions options = QuickRetryOptions({server.endpoint()});
  options.placement_version = [&] { return mine.load(); };
  Client client(options);
  for (int i = 0; i < 3; ++i) REQUIRE(client.NextIds("k", 1).ok());
  CHECK(Told(server) == std::vector<int64_t>{2});  // told once, its refusal ignored
  CHECK(client.PlacementVersion() == 0);
  CHECK(server.connections == 1);  // the connection stayed
}
