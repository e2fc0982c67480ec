// When an instance with store groups reads the placement: PlacementPoll's
// rule on a manual clock, and a ClusterNode over the memory lease store
// whose rounds read it only when the poll, a nudge or a newer version
// heard says so.
#include "server/cluster/placement_poll.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/base/manual_clock.h"
#include "server/cluster/cluster_node.h"
#include "storage/memory/memory_shard_lease_store.h"
#include "tests/unit/wait_for.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;

}  // namespace

TEST_CASE(
    "placement poll: the first round, a due poll, a nudge, a failed read or a newer version") {
  ManualClock clock;
  PlacementPoll poll(std::chrono::minutes(1));
  CHECK(poll.Due(clock.Now(), false, 0));  // never read
  poll.Read(clock.Now(), /*ok=*/true);
  CHECK_FALSE(poll.Due(clock.Now(), false, 3));
  clock.Advance(59s);
  CHECK_FALSE(poll.Due(clock.Now(), false, 3));
  CHECK(poll.Due(clock.Now(), /*nudged=*/true, 3));
  clock.Advance(1s);
  CHECK(poll.Due(clock.Now(), false, 3));  // a minute since the read
  poll.Read(clock.Now(), true);
  CHECK_FALSE(poll.Due(clock.Now(), false, 3));

  // Heard: only a version above the one held, and above any heard, wakes.
  CHECK_FALSE(poll.Heard(3, 3));
  CHECK_FALSE(poll.Heard(2, 3));
  CHECK_FALSE(poll.Due(clock.Now(), false, 3));
  CHECK(poll.Heard(5, 3));
  CHECK(poll.heard() == 5);
  CHECK_FALSE(poll.Heard(5, 3));  // the same again: already asked for
  CHECK_FALSE(poll.Heard(4, 3));
  CHECK(poll.Due(clock.Now(), false, 3));
  poll.Read(clock.Now(), true);  // read: 5 now held
  CHECK_FALSE(poll.Due(clock.Now(), false, 5));
  CHECK(poll.Due(clock.Now(), false, 4));  // a read that still shows less: read again

  // A failed read: the next round reads again, whatever else.
  poll.Read(clock.Now(), false);
  CHECK(poll.Due(clock.Now(), false, 5));
  poll.Read(clock.Now(), true);
  CHECK_FALSE(poll.Due(clock.Now(), false, 5));

  PlacementPoll every_round(Clock::Duration::zero());
  every_round.Read(clock.Now(), true);
  CHECK(every_round.Due(clock.Now(), false, 0));
}

TEST_CASE("placement poll: a node with a long poll reads the placement when it hears a newer one") {
  MemoryShardLeaseStore store;
  ManualClock clock;  // never advanced: the poll (an hour) is never due by time
  ClusterNodeOptions options;
  options.instance = "a";
  options.shards = 8;
  options.timing.lease = 60s;  // rounds every 15 s: only wake-ups run rounds here
  options.placement_poll = std::chrono::hours(1);
  ClusterNode node(store, clock, options, nullptr);
  std::atomic<int64_t> in_database{3};  // the home group's version
  std::atomic<int64_t> held{0};
  std::atomic<int> reads{0}, rounds{0};
  node.SetPlacementReader(PlacementReader{[&] {
                                            ++reads;
                                            held = in_database.load();
                                            return OkStatus();
                                          },
                                          [&] { return held.load(); }});
  node.SetRoundHook([&] { ++rounds; });
  node.Start("a:1");
  REQUIRE(WaitFor([&] { return rounds.load() >= 1; }, 3s));
  CHECK(reads == 1);  // the first round reads it
  CHECK(held == 3);

  // The placement moves on in the database; nobody says so.
  in_database = 5;
  node.HeardPlacement(3);  // not newer: no round, no read
  node.HeardPlacement(2);
  std::this_thread::sleep_for(150ms);
  CHECK(rounds == 1);
  CHECK(reads == 1);

  // A peer's reply says 5: a round runs at once and reads it.
  node.HeardPlacement(5);
  REQUIRE(WaitFor([&] { return held.load() == 5; }, 3s));
  CHECK(reads == 2);
  CHECK(rounds == 2);

  // Rounds for other reasons read it only when nudged: a RefreshSoon (a
  // request that found the map stale) or a Nudge (a move's switch) does.
  in_database = 6;
  node.Nudge();
  REQUIRE(WaitFor([&] { return held.load() == 6; }, 3s));
  CHECK(reads == 3);
  node.Stop();
}

TEST_CASE("placement poll: a node without a reader ignores versions heard") {
  MemoryShardLeaseStore store;
  ManualClock clock;
  ClusterNodeOptions options;
  options.instance = "a";
  options.shards = 8;
  options.timing.lease = 60s;
  ClusterNode node(store, clock, options, nullptr);
  std::atomic<int> rounds{0};
  node.SetRoundHook([&] { ++rounds; });
  node.Start("a:1");
  REQUIRE(WaitFor([&] { return rounds.load() >= 1; }, 3s));
  node.HeardPlacement(100);  // no store groups: nothing to read, no round
  std::this_thread::sleep_for(100ms);
  CHECK(rounds == 1);
  node.Stop();
}

}  // namespace seqd
