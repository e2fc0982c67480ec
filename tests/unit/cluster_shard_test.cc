// Cluster mode's pure pieces: the key → shard hash, rendezvous assignment,
// and the lease time rules on manual clocks (holder expiry, taker wait,
// drift), which must never let two instances serve one shard at once.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "server/cluster/shard_lease.h"
#include "server/cluster/shard_map.h"

namespace seqd {

using namespace std::chrono_literals;
using TP = Clock::TimePoint;

TEST_CASE("cluster: the shard hash is FNV-1a-64 mod shards, stable across builds") {
  // Published vectors of FNV-1a-64.
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(Fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(Fnv1a64("foobar") == 0x85944171f73967e8ull);
  CHECK(ShardOf("foobar", 1024) == 0x85944171f73967e8ull % 1024);
  CHECK(ShardOf("anything", 1) == 0);
  // Spread: 100k keys over 1024 shards, none far from the mean (~98).
  std::vector<int> hits(1024);
  for (int i = 0; i < 100000; ++i) ++hits[ShardOf("sg_" + std::to_string(i), 1024)];
  for (int h : hits) {
    CHECK(h > 50);
    CHECK(h < 160);
  }
}

TEST_CASE("cluster: rendezvous assignment is deterministic, balanced and moves little") {
  const std::vector<std::string> three = {"a:7070", "b:7070", "c:7070"};
  const std::vector<std::string> shuffled = {"c:7070", "a:7070", "b:7070"};
  const auto map = AssignShards(1024, three);
  CHECK(map == AssignShards(1024, shuffled));  // order of members does not matter
  std::map<std::string, int> per;
  for (const std::string& o : map) ++per[o];
  for (const auto& [name, n] : per) {
    const std::string& member = name;  // clang 14 cannot capture a binding (CAPTURE does)
    CAPTURE(member);
    CHECK(n > 280);  // ~341 each
    CHECK(n < 400);
  }
  // A fourth member takes about a quarter; shards move only to it.
  const auto four = AssignShards(1024, {"a:7070", "b:7070", "c:7070", "d:7070"});
  int moved = 0;
  for (size_t s = 0; s < map.size(); ++s) {
    if (map[s] != four[s]) {
      ++moved;
      CHECK(four[s] == "d:7070");
    }
  }
  CHECK(moved > 200);
  CHECK(moved < 320);
  // A member leaving hands only its own shards over.
  const auto two = AssignShards(1024, {"a:7070", "c:7070"});
  for (size_t s = 0; s < map.size(); ++s) {
    if (map[s] != "b:7070") CHECK(two[s] == map[s]);
  }
  CHECK(OwnerOf(5, {}).empty());
}

TEST_CASE("cluster: a holder serves until renewal-sent + lease*(1-drift), a renewal extends") {
  LeaseTiming t{3s, 0.01};
  ShardLeaseHolder h(t);
  const TP t0{};
  CHECK_FALSE(h.Serving(t0));
  h.Granted(7, t0 + 1s);  // acquired by a request sent at 1 s
  CHECK(h.epoch() == 7);
  CHECK(h.Serving(t0 + 1s));
  CHECK(h.Serving(t0 + 1s + 2969ms));
  CHECK_FALSE(h.Serving(t0 + 1s + 2970ms));  // 3 s * 0.99 after the send, not the answer
  h.Granted(7, t0 + 2s);
  CHECK(h.Serving(t0 + 4900ms));
  h.Granted(7, t0 + 1500ms);  // a late answer of an older renewal never shortens it
  CHECK(h.deadline() == t0 + 2s + 2970ms);
  h.Lost();
  CHECK_FALSE(h.Serving(t0 + 2s));
}

TEST_CASE("cluster: a taker waits lease*(1+drift) from its read; a new version restarts it") {
  LeaseTiming t{3s, 0.01};
  ShardTakeover k(t);
  const TP t0{};
  CHECK_FALSE(k.MayTake(t0 + 1h));
  k.Observed(4, "b:7070", t0);
  CHECK(k.expected_version() == 4);
  CHECK_FALSE(k.MayTake(t0 + 3029ms));
  CHECK(k.MayTake(t0 + 3030ms));
  k.Observed(4, "b:7070", t0 + 2s);  // same version seen again: the wait still runs from t0
  CHECK(k.MayTake(t0 + 3030ms));
  k.Observed(5, "b:7070", t0 + 3100ms);  // renewed meanwhile: wait again
  CHECK_FALSE(k.MayTake(t0 + 6s));
  CHECK(k.MayTake(t0 + 3100ms + 3030ms));
  ShardTakeover released(t);
  released.Observed(9, "", t0 + 5s);  // an explicit release: no wait
  CHECK(released.MayTake(t0 + 5s));
}

TEST_CASE("cluster: with clocks drifting within the bound, the holder always stops first") {
  // Real time in ns. Each clock runs at a rate within max_drift/2 of real
  // time. The holder's renewal is sent at real time `sent` and commits
  // before the taker's read, sent at real time `seen` >= sent.
  const LeaseTiming t{3s, 0.01};
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> rate(1 - t.max_drift / 2, 1 + t.max_drift / 2);
  std::uniform_int_distribution<int64_t> gap(0, 2'000'000'000);
  const double lease_ns = std::chrono::duration<double, std::nano>(t.lease).count();
  double closest = 1e18;
  for (int i = 0; i < 100000; ++i) {
    const double holder_rate = rate(rng), taker_rate = rate(rng);
    const double sent = 1e9, seen = sent + static_cast<double>(gap(rng));
    // Clock readings are real * rate: a span of D on a clock lasts D / rate.
    const double holder_stops = sent + lease_ns * (1 - t.max_drift) / holder_rate;
    const double taker_starts = seen + lease_ns * (1 + t.max_drift) / taker_rate;
    REQUIRE(holder_stops < taker_starts);
    closest = std::min(closest, taker_starts - holder_stops);
  }
  CHECK(closest > 0);
  // And the rule is tight enough to be useful: without the margins a fast
  // taker and a slow holder would overlap.
  const double holder_stops = 1e9 + lease_ns / (1 - t.max_drift / 2);
  const double taker_starts = 1e9 + lease_ns / (1 + t.max_drift / 2);
  CHECK(taker_starts < holder_stops);
}

}  // namespace seqd
