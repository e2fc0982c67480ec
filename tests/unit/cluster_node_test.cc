// ClusterNode's thread over the memory lease store: two nodes start, split
// the shards, answer Check() from other threads while their rounds run (the
// ThreadSanitizer pass runs this too), wake each other with nudges, and a
// clean leave hands every shard to the other node at once, with the leaving
// node's map already pointing at it.
#include "server/cluster/cluster_node.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/base/manual_clock.h"
#include "server/cluster/shard_map.h"
#include "storage/memory/memory_shard_lease_store.h"
#include "tests/unit/wait_for.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;
constexpr uint32_t kShards = 32;

ClusterNodeOptions Options(const std::string& id) {
  ClusterNodeOptions o;
  o.instance = id;
  o.shards = kShards;
  o.timing.lease = 2s;  // rounds every 500 ms: a test waits only on nudges
  return o;
}

size_t Serving(const ClusterNode& n) {
  size_t count = 0;
  for (uint32_t s = 0; s < kShards; ++s) {
    // A key of shard s: probe keys until one hashes there.
    for (int k = 0;; ++k) {
      std::string key = "k";  // appended: GCC 12's -Wrestrict misfires on "k" + string
      key += std::to_string(k);
      if (ShardOf(key, kShards) != s) continue;
      count += n.Check(key).serving() ? 1 : 0;
      break;
    }
  }
  return count;
}

}  // namespace

TEST_CASE("cluster node: two nodes split the shards, nudges move them, a leave hands them over") {
  MemoryShardLeaseStore store;
  ManualClock clock;  // never advanced: no lease ever expires by time here
  ClusterNode a(store, clock, Options("a"), nullptr);
  ClusterNode b(store, clock, Options("b"), nullptr);
  // Nudges go straight to the other node, as PeerClients would send them.
  a.SetNudger([&b](const std::string& address, std::function<void()> answered) {
    if (address == "b:1") b.Nudge();
    answered();
  });
  b.SetNudger([&a](const std::string& address, std::function<void()> answered) {
    if (address == "a:1") a.Nudge();
    answered();
  });

  // Readers on other threads all along (data races show under TSan).
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      (void)a.Check("some-key");
      (void)b.Route("other-key");
      (void)a.snapshot();
    }
  });

  a.Start("a:1");
  REQUIRE(WaitFor([&] { return Serving(a) == kShards; }, 3s));  // alone: every shard
  b.Start("b:1");
  // b's first round nudges a, which releases b's half and nudges b, which
  // takes the released rows at once: no lease wait anywhere.
  REQUIRE(WaitFor([&] { return Serving(a) + Serving(b) == kShards && Serving(b) > 0; }, 3s));
  CHECK(Serving(a) > 0);
  for (uint32_t s = 0; s < kShards; ++s) {
    std::string key = "x";
    key += std::to_string(s);
    CHECK_FALSE((a.Check(key).serving() && b.Check(key).serving()));
  }

  // A clean leave: a stops serving at once, its map names b for everything.
  std::atomic<bool> left{false};  // set on a's thread
  a.Leave([&left] { left = true; });
  REQUIRE(WaitFor([&] { return left.load(); }, 3s));
  CHECK(Serving(a) == 0);
  const auto snap = a.snapshot();
  REQUIRE(snap);
  for (const auto& shard : snap->shards) CHECK(shard.owner == "b");
  CHECK_FALSE(snap->members.at("a").live);
  // b was nudged and takes every released shard without a lease wait.
  REQUIRE(WaitFor([&] { return Serving(b) == kShards; }, 3s));
  CHECK(a.Route("any").owner == "b");

  stop = true;
  reader.join();
  a.Stop();
  b.Stop();
}

TEST_CASE("cluster node: a burst of map refreshes runs a few rounds, not one per request") {
  MemoryShardLeaseStore store;
  ManualClock clock;
  ClusterNode a(store, clock, Options("a"), nullptr);
  a.Start("a:1");
  REQUIRE(WaitFor([&] { return a.ready() && Serving(a) == kShards; }, 3s));
  auto beats = [&]() -> int64_t {  // one heartbeat per round
    auto members = store.ReadMembers();
    REQUIRE(members.ok());
    for (const ClusterMember& m : *members) {
      if (m.instance == "a") return m.heartbeat;
    }
    return -1;
  };
  const int64_t before = beats();
  // 300 ms of requests finding the map stale, 1,000 of them: without the
  // refreshes at most one periodic round (every 500 ms) would run.
  const auto until = std::chrono::steady_clock::now() + 300ms;
  for (int i = 0; i < 1000 && std::chrono::steady_clock::now() < until; ++i) {
    a.RefreshSoon();
    std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  std::this_thread::sleep_for(20ms);
  const int64_t rounds = beats() - before;
  CHECK(rounds >= 3);
  CHECK(rounds <= 9);  // one per 50 ms, and the periodic one
  a.Stop();
}

TEST_CASE("cluster node: shards released to a node whose nudge was lost move on a map refresh") {
  MemoryShardLeaseStore store;
  ManualClock clock;
  ClusterNodeOptions oa = Options("a"), ob = Options("b");
  oa.timing.lease = ob.timing.lease = 60s;  // rounds every 15 s: only wake-ups move shards here
  ClusterNode a(store, clock, oa, nullptr);
  ClusterNode b(store, clock, ob, nullptr);
  std::atomic<bool> lose_nudges_to_b{false};
  a.SetNudger([&](const std::string& address, std::function<void()> answered) {
    if (address == "b:1" && !lose_nudges_to_b) b.Nudge();
    answered();
  });
  b.SetNudger([&a](const std::string& address, std::function<void()> answered) {
    if (address == "a:1") a.Nudge();
    answered();
  });
  a.Start("a:1");
  REQUIRE(WaitFor([&] { return Serving(a) == kShards; }, 3s));
  b.Start("b:1");
  REQUIRE(WaitFor([&] { return Serving(a) + Serving(b) == kShards && Serving(b) > 0; }, 3s));

  // a leaves; its wake-up to b is lost. b's map (from its last round)
  // still names a for a's shards, so nothing moves on its own for 15 s.
  lose_nudges_to_b = true;
  std::atomic<bool> left{false};
  a.Leave([&left] { left = true; });
  REQUIRE(WaitFor([&] { return left.load(); }, 3s));
  CHECK(Serving(b) < kShards);
  // What KeyRouter does when a peer forwards a request b's map gives to
  // another (NO_FORWARD), or when b's map shows a shard released to b: it
  // refreshes the map, and the round takes the released rows at once.
  b.RefreshSoon();
  CHECK(WaitFor([&] { return Serving(b) == kShards; }, 3s));
  a.Stop();
  b.Stop();
}

}  // namespace seqd
