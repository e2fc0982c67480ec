// A SegmentAllocator whose every step the test drives: its store is a
// MemoryStore under a FaultyStore (faults injected through `store`), its
// database tasks run when the test runs `db`, its time moves when the test
// moves `clock`. And TakeOutcome, what a take was answered with.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"

namespace seqd {

// What a take's callback was answered with: how many times it ran, and the
// batch or the error of its last run.
struct TakeOutcome {
  int calls = 0;
  std::optional<IdBatch> batch;
  std::optional<Error> error;

  bool called() const { return calls > 0; }
  TakeCallback Callback() {
    return [this](Result<IdBatch> r) {
      ++calls;
      if (r) {
        batch = *r;
      } else {
        error = r.error();
      }
    };
  }
  // The batch's only range; REQUIREs a batch of one range.
  IdRange range() const {
    REQUIRE(batch);
    REQUIRE(batch->ranges.size() == 1);
    return batch->ranges.front();
  }
};

// The allocator over memory <- store, built with `options` and `rules`.
struct AllocatorFixture {
  explicit AllocatorFixture(AllocatorOptions options = {}, std::vector<AutoKeyRule> rules = {})
      : alloc(std::make_unique<SegmentAllocator>(store, db, clock, KeyRules(std::move(rules)),
                                                 options)) {}

  MemoryStore memory;
  FaultyStore store{memory};
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<SegmentAllocator> alloc;
};

}  // namespace seqd
