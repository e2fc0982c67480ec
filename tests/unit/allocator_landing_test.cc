// The allocator installs each key's reservation as the store lands it
// (SegmentStore::ReserveEach): a key the store answers late (its row locked
// by a frozen transaction, MysqlStore) does not hold back the others of its
// batch.
#include <doctest/doctest.h>

#include <functional>
#include <map>

#include "server/base/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "storage/memory_store.h"

using namespace seqd;

namespace {

// A MemoryStore whose ReserveEach lands the key `late` last, after calling
// `before_late` (the others have landed by then).
class LateKeyStore final : public SegmentStore {
 public:
  LateKeyStore(std::string late, std::function<void()> before_late)
      : late_(std::move(late)), before_late_(std::move(before_late)) {}

  MemoryStore memory;
  int batches = 0;
  size_t largest_batch = 0;

  Status EnsureSchema() override { return memory.EnsureSchema(); }
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    return memory.Reserve(key, step);
  }
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override {
    return memory.CreateKey(key, step, description);
  }
  Result<KeyRow> GetKey(std::string_view key) override { return memory.GetKey(key); }
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override {
    return memory.ListKeys(after, limit);
  }
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override {
    return memory.SetStep(key, step);
  }
  Status Ping() override { return memory.Ping(); }

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
