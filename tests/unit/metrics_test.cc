// Metrics: the KeySnapshot rate and runway, the Prometheus registry and its
// label cardinality rules (docs/metrics.md).
#include <doctest/doctest.h>

#include "server/core/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "storage/memory_store.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

struct AllocFixture {
  MemoryStore store;
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<SegmentAllocator> alloc;

  explicit AllocFixture(std::vector<AutoKeyRule> rules = {}) {
    alloc = std::make_unique<SegmentAllocator>(store, db, clock, KeyRules(std::move(rules)),
                                               AllocatorOptions{});
  }
  void Take(std::string_view key, int64_t count) {
    bool ok = false;
    alloc->Take(key, count, [&](Result<IdBatch> r) { ok = static_cast<bool>(r); });
    db.RunAll();
    REQUIRE(ok);
  }
};

}  // namespace

TEST_CASE("KeySnapshot: rate over about the last minute and runway from both buffers") {
  AllocFixture f;
  REQUIRE(f.store.CreateKey("order", 1000, ""));
  f.Take("order", 1);
  {
    auto snap = f.alloc->SnapshotKey("order");
    REQUIRE(snap);
    CHECK(snap->rate_per_s == 0);  // no time has passed yet
    CHECK_FALSE(snap->runway_s);
  }
  f.clock.Advance(10s);
  f.Take("order", 99);  // 100 IDs in 10 s
  auto snap = f.alloc->SnapshotKey("order");
  REQUIRE(snap);
  CHECK(snap->rate_per_s == doctest::Approx(10.0));
  REQUIRE(snap->runway_s);
  const int64_t left = (snap->current.ready ? snap->current.last - snap->current.next + 1 : 0) +
                       (snap->next.ready ? snap->next.last - snap->next.next + 1 : 0);
  CHECK(*snap->runway_s == doctest::Approx(left / 10.0));

  // Idle for minutes: the rate falls to 0 and the runway disappears.
  for (int i = 0; i < 20; ++i) {
    f.clock.Advance(15s);
    (void)f.alloc->SnapshotKey("order");  // scrapes every 15 s
  }
  snap = f.alloc->SnapshotKey("order");
  CHECK(snap->rate_per_s == 0);
  CHECK_FALSE(snap->runway_s);

  // A new burst is measured over the last minute, not since the start.
  for (int i = 0; i < 6; ++i) {
    f.Take("order", 50);
    f.clock.Advance(10s);
    (void)f.alloc->SnapshotKey("order");
  }
  snap = f.alloc->SnapshotKey("order");
  CHECK(snap->rate_per_s == doctest::Approx(5.0).epsilon(0.2));
}
