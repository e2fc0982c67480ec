// ClusterKeeper on a manual clock over the memory lease store: shards split
// by rendezvous, renewals, takeover after a dead member's leases, handoff on
// join and on a clean leave; at no sampled moment do two instances serve one
// shard.
#include "server/cluster/cluster_keeper.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/cluster/shard_map.h"
#include "storage/memory/memory_shard_lease_store.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;
constexpr uint32_t kShards = 64;

struct Cluster {
  MemoryShardLeaseStore store;
  ManualClock clock;
  std::vector<std::unique_ptr<ClusterKeeper>> keepers;
  std::vector<bool> running;

  size_t Add(const std::string& id) {
    ClusterKeeperOptions o;
    o.instance = id;
    o.advertise = "127.0.0.1:" + std::to_string(7000 + keepers.size());
    o.shards = kShards;
    o.timing = LeaseTiming{3s, 0.01};
    keepers.push_back(std::make_unique<ClusterKeeper>(store, clock, o));
    running.push_back(true);
    REQUIRE(keepers.back()->Start().ok());
    return keepers.size() - 1;
  }
  // Every running keeper ticks, then time moves by `step`; checks that no
  // shard is served by two keepers at any sampled moment.
  void Run(Clock::Duration total, Clock::Duration step = 1s) {
    for (auto t = Clock::Duration::zero(); t < total; t += step) {
      for (size_t i = 0; i < keepers.size(); ++i) {
        if (running[i]) REQUIRE(keepers[i]->Tick().ok());
      }
      CheckExclusive();
      clock.Advance(step);
      CheckExclusive();
    }
  }
  void CheckExclusive() const {
    for (uint32_t s = 0; s < kShards; ++s) {
      int serving = 0;
      for (const auto& k : keepers) serving += k->Serving(s, clock.Now()) ? 1 : 0;
      REQUIRE_MESSAGE(serving <= 1, "shard ", s, " served by ", serving, " instances");
    }
  }
  int ServingCount(size_t i) const {
    int n = 0;
    for (uint32_t s = 0; s < kShards; ++s) n += keepers[i]->Serving(s, clock.Now()) ? 1 : 0;
    return n;
  }
  int Unserved() const {
    int n = 0;
    for (uint32_t s = 0; s < kShards; ++s) {
      bool any = false;
      for (const auto& k : keepers) any = any || k->Serving(s, clock.Now());
      n += any ? 0 : 1;
    }
    return n;
  }
};

}  // namespace

TEST_CASE("cluster keeper: one instance holds every shard while it renews") {
  Cluster c;
  c.Add("a");
  c.Run(3s);
  CHECK(c.ServingCount(0) == static_cast<int>(kShards));
  c.running[0] = false;
  c.clock.Advance(2960ms);        // last renewal was sent 1 s before the last advance
  CHECK(c.ServingCount(0) == 0);  // stops serving lease*(1-drift) after the last send
  c.running[0] = true;
  c.Run(1s);
  CHECK(c.ServingCount(0) == static_cast<int>(kShards));
}

TEST_CASE("cluster keeper: two instances split the shards by rendezvous; a dead one's move") {
  Cluster c;
  c.Add("a");
  c.Add("b");
  c.Run(6s);  // b joined after a took everything: a hands b's shards over
  CHECK(c.Unserved() == 0);
  const std::vector<std::string> both = {"a", "b"};
  for (uint32_t s = 0; s < kShards; ++s) {
    const size_t owner = OwnerOf(s, both) == "a" ? 0 : 1;
    CHECK(c.keepers[owner]->Serving(s, c.clock.Now()));
  }
  const int b_had = c.ServingCount(1);
  CHECK(b_had > 10);

  // b dies (no more ticks): a takes its shards only after b's leases ran
  // out, and never while b still serves (checked every 250 ms).
  c.running[1] = false;
  c.Run(12s, 250ms);
  CHECK(c.ServingCount(0) == static_cast<int>(kShards));
  CHECK(c.ServingCount(1) == 0);
  const auto snap = c.keepers[0]->snapshot();
  CHECK_FALSE(snap->members.at("b").live);
  for (const auto& shard : snap->shards) CHECK(shard.owner == "a");
}

TEST_CASE("cluster keeper: a clean leave hands over at once, a join takes its share") {
  Cluster c;
  c.Add("a");
  c.Add("b");
  c.Run(6s);
  REQUIRE(c.Unserved() == 0);
  c.running[1] = false;
  REQUIRE(c.keepers[1]->Leave().ok());
  CHECK(c.ServingCount(1) == 0);
  c.Run(1s);  // one tick of a: released rows are taken without a lease wait
  CHECK(c.ServingCount(0) == static_cast<int>(kShards));

  c.Add("c");
  c.Run(3s);
  CHECK(c.Unserved() == 0);
  const std::vector<std::string> ac = {"a", "c"};
  int c_owns = 0;
  for (uint32_t s = 0; s < kShards; ++s) {
    const bool to_c = OwnerOf(s, ac) == "c";
    c_owns += to_c ? 1 : 0;
    CHECK(c.keepers[to_c ? 2 : 0]->Serving(s, c.clock.Now()));
    // Every move raised the epoch (the fencing token): a, b, a again, then c.
    if (to_c) CHECK(c.keepers[2]->Epoch(s) >= 2);
  }
  CHECK(c_owns > 10);
}

TEST_CASE("cluster keeper: a member joining after an owner died does not delay the takeover") {
  Cluster c;
  c.Add("a");
  c.Add("b");
  c.Run(6s, 250ms);
  REQUIRE(c.Unserved() == 0);
  const int b_had = c.ServingCount(1);
  c.running[1] = false;  // b dies (kill -9) ...
  c.Run(1s, 250ms);
  c.Add("c");  // ... and its replacement joins a second later
  // Among {a, c}, c is the rendezvous owner of some of b's shards. c first
  // reads their rows now, so its own wait would end ~1 s after a's: a takes
  // every one of b's shards on a's clock, then hands c its share.
  const std::vector<std::string> ac = {"a", "c"};
  int c_gets = 0;
  for (uint32_t s = 0; s < kShards; ++s) c_gets += OwnerOf(s, ac) == "c" ? 1 : 0;
  REQUIRE(c_gets > 5);
  c.Run(2500ms, 250ms);  // b's last renewal + lease*(1+drift) + a round: all served
  CHECK(c.Unserved() == 0);
  CHECK(c.ServingCount(0) + c.ServingCount(2) == static_cast<int>(kShards));
  CHECK(c.ServingCount(0) >= b_had);
  c.Run(1s, 250ms);  // a's next rounds hand c its share, taken at once
  CHECK(c.Unserved() == 0);
  for (uint32_t s = 0; s < kShards; ++s) {
    CHECK(c.keepers[OwnerOf(s, ac) == "c" ? 2 : 0]->Serving(s, c.clock.Now()));
  }
  // c ticked last: in its map every shard has a live owner, so no taker.
  for (const auto& shard : c.keepers[2]->snapshot()->shards) CHECK(shard.taker.empty());
}

TEST_CASE("cluster keeper: a joiner takes released shards of an owner that died before it joined") {
  Cluster c;
  c.Add("a");
  c.Add("b");
  c.Add("c");
  c.Run(6s, 250ms);
  REQUIRE(c.Unserved() == 0);
  c.running[2] = false;  // c dies (kill -9) ...
  c.Run(1s, 250ms);
  c.Add("d");  // ... and its replacement joins a second later
  // a and b judge c dead and take its shards, then release to d the ones
  // d owns among {a, b, d}. To d, which has watched c for only a while, c
  // is still live for a lease from its first sight; among those released
  // rows are some that c would own in d's view. d must take them at once
  // (c has not been seen to beat), not a second later when d judges c dead.
  const std::vector<std::string> abd = {"a", "b", "d"};
  const std::vector<std::string> abcd = {"a", "b", "c", "d"};
  int contested = 0;
  for (uint32_t s = 0; s < kShards; ++s) {
    contested += OwnerOf(s, abd) == "d" && OwnerOf(s, abcd) == "c" ? 1 : 0;
  }
  REQUIRE(contested > 0);
  // c's last renewal + lease*(1+drift), a round to take, a round to hand
  // over: served by then, a quarter second before d's own wait for c ends.
  c.Run(2750ms, 250ms);
  CHECK(c.Unserved() == 0);
  for (uint32_t s = 0; s < kShards; ++s) {
    if (OwnerOf(s, abd) == "d") CHECK(c.keepers[3]->Serving(s, c.clock.Now()));
  }
}

}  // namespace seqd
