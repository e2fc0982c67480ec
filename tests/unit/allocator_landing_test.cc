// The allocator installs each key's reservation as the store lands it
// (SegmentStore::ReserveEach): a key the store answers late (its row locked
// by a frozen transaction, MysqlStore) does not hold back the others of its
// batch. Requests parked for a landing are served before any take that
// came after them.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/test_stores.h"

using namespace seqd;

namespace {

// A MemoryStore whose ReserveEach lands the key `late` last, after calling
// `before_late` (the others have landed by then).
class LateKeyStore final : public ForwardingSegmentStore {
 public:
  LateKeyStore(std::string late, std::function<void()> before_late)
      : ForwardingSegmentStore(memory),
        late_(std::move(late)),
        before_late_(std::move(before_late)) {}

  MemoryStore memory;
  int batches = 0;
  size_t largest_batch = 0;

  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override {
    ++batches;
    largest_batch = std::max(largest_batch, requests.size());
    std::optional<size_t> late;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].key == late_) {
        late = i;
      } else {
        landed(i, memory.Reserve(requests[i].key, requests[i].step));
      }
    }
    if (!late) return;
    before_late_();
    landed(*late, memory.Reserve(late_, requests[*late].step));
  }

 private:
  const std::string late_;
  const std::function<void()> before_late_;
};

}  // namespace

TEST_CASE("keys a batch lands early are answered before its late key") {
  std::map<std::string, bool> answered;
  std::map<std::string, bool> answered_before_late;
  LateKeyStore store("k", [&] { answered_before_late = answered; });
  ManualRunner db;
  ManualClock clock;
  AllocatorOptions options;
  options.reservation_flushes = 1;
  SegmentAllocator alloc(store, db, clock, KeyRules(std::vector<AutoKeyRule>{}), options);
  const std::vector<std::string> keys = {"a", "b", "k", "c", "d"};
  for (const auto& key : keys) REQUIRE(store.memory.CreateKey(key, 10, ""));
  for (const auto& key : keys) {
    alloc.Take(key, 1, [&answered, key](Result<IdBatch> r) {
      REQUIRE(r);
      CHECK(r->ranges[0].first == 1);
      answered[key] = true;
    });
  }
  db.RunAll();
  CHECK(store.batches == 1);  // one batch: the late key was among the others
  CHECK(store.largest_batch == keys.size());
  for (const auto& key : keys) {
    CAPTURE(key);
    CHECK(answered[key]);
    CHECK(answered_before_late[key] == (key != "k"));
  }
}

TEST_CASE("requests parked for a landing are served before takes made after them") {
  // One caller pipelines takes (as a RESP or binary connection does) without
  // waiting for answers: the early ones park for a reservation while the
  // later ones keep coming. The landing must serve the parked ones before
  // a later take may claim from the new segment lock-free; else the caller
  // sees its later request answered with lower IDs. Small steps make
  // thousands of landings with requests parked; the race is narrow, so
  // several keys each get a run.
  MemoryStore store;
  ThreadPoolRunner db(2);
  ManualClock clock;
  AllocatorOptions options;
  options.max_step = 512;
  SegmentAllocator alloc(store, db, clock, KeyRules(std::vector<AutoKeyRule>{}), options);
  StopRunnerOnExit stop_db(db);  // before the allocator goes
  constexpr int kKeys = 8, kTakes = 200'000;
  int out_of_order = 0, failed = 0;
  std::vector<std::atomic<int64_t>> first(kTakes);
  for (int k = 0; k < kKeys; ++k) {
    std::string key = "k";
    key += std::to_string(k);  // not "k" + ...: GCC 12 warns (-Wrestrict, a false positive)
    REQUIRE(store.CreateKey(key, 256, ""));
    std::atomic<int> answered{0};
    for (int i = 0; i < kTakes; ++i) {
      alloc.Take(key, 1 + (i % 3), [&first, &answered, i](Result<IdBatch> r) {
        first[static_cast<size_t>(i)].store(r ? r->ranges.front().first : -1);
        answered.fetch_add(1, std::memory_order_release);
      });
    }
    while (answered.load(std::memory_order_acquire) < kTakes) std::this_thread::yield();
    for (size_t i = 0; i < first.size(); ++i) {
      if (first[i].load() < 0) ++failed;
      if (i > 0 && first[i].load() <= first[i - 1].load()) ++out_of_order;
    }
  }
  CHECK(failed == 0);
  CHECK(out_of_order == 0);
}

TEST_CASE("a take made while a block request waits is answered after it, with higher IDs") {
  MemoryStore store;
  REQUIRE(store.CreateKey("k", 10, ""));
  ManualRunner db;
  ManualClock clock;
  SegmentAllocator alloc(store, db, clock, KeyRules(std::vector<AutoKeyRule>{}),
                         AllocatorOptions{});
  std::optional<IdBatch> first, block, after;
  alloc.Take("k", 2, [&](Result<IdBatch> r) { first = *r; });
  db.RunAll();  // [1,10] lands; the next segment is reserved and lands too
  REQUIRE(first);
  REQUIRE(alloc.SnapshotKey("k")->next.ready);
  // 8 IDs left in the current segment, 10 in the next: a block of 15 fits
  // in neither and parks, with IDs still buffered.
  alloc.Take(
      "k", 15, [&](Result<IdBatch> r) { block = *r; }, {}, /*contiguous=*/true);
  CHECK_FALSE(block);
  alloc.Take("k", 1, [&](Result<IdBatch> r) { after = *r; });
  CHECK_FALSE(after);                  // behind the block, not from the buffer
  CHECK_FALSE(alloc.TryTake("k", 1));  // nor lock-free
  db.RunAll();
  REQUIRE(block);
  REQUIRE(after);
  CHECK(after->ranges.front().first > block->ranges.back().last);
}

TEST_CASE("parked requests' deadlines: a timer per lane, each request failed once, in time") {
  MemoryStore store;
  ManualRunner db;  // never run: every request stays parked
  ManualClock clock;
  AllocatorOptions options;
  options.wait_deadline = std::chrono::seconds(1);
  SegmentAllocator alloc(store, db, clock, KeyRules(std::vector<AutoKeyRule>{}), options);
  constexpr int kKeys = 1000;
  std::vector<int> calls(kKeys, 0);
  for (int i = 0; i < kKeys; ++i) {
    std::string key = "k";
    key += std::to_string(i);  // not "k" + ...: GCC 12 warns (-Wrestrict, a false positive)
    REQUIRE(store.CreateKey(key, 10, ""));
    alloc.Take(key, 1, [&calls, i](Result<IdBatch> r) {
      CHECK(r.error().code == ErrorCode::kStoreUnavailable);
      ++calls[static_cast<size_t>(i)];
    });
    if (i == kKeys / 2) clock.Advance(std::chrono::milliseconds(500));
  }
  CHECK(clock.pending_timers() <= 8);             // not one per request
  clock.Advance(std::chrono::milliseconds(999));  // the first half is due
  for (int i = 0; i < kKeys; ++i) CHECK(calls[static_cast<size_t>(i)] == (i <= kKeys / 2 ? 1 : 0));
  clock.Advance(std::chrono::milliseconds(501));
  for (int i = 0; i < kKeys; ++i) CHECK(calls[static_cast<size_t>(i)] == 1);
  CHECK(alloc.stats().timeouts == kKeys);
}
