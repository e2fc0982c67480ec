// Cluster mode's gate in the allocator and the message writers, in
// process: a fake gate (which shards this instance holds, at which epoch)
// and memory stores whose fenced writes check a fake lease table, driven by
// hand. What is attacked: IDs buffered under a lost epoch must never be
// served, a fenced-out reservation or message batch stores nothing and
// stops the shard, and requests for shards not held are refused with
// kWrongOwner (the router then forwards or waits: tests/e2e/test_cluster.py).
#include <doctest/doctest.h>

#include <future>
#include <map>
#include <mutex>

#include "server/base/manual_clock.h"
#include "server/cluster/shard_map.h"
#include "server/core/segment_allocator.h"
#include "server/core/shard_gate.h"
#include "server/msg/message_service.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/allocator_fixture.h"
#include "tests/unit/test_stores.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kShards = 16;

// Holds the shards the test says, at the epochs it says.
class FakeGate final : public ShardGate {
 public:
  ShardGrant Check(std::string_view key) const override {
    std::lock_guard lock(mu_);
    const uint32_t shard = ShardOf(key, kShards);
    auto it = held_.find(shard);
    return ShardGrant{shard, it == held_.end() ? 0 : it->second};
  }
  const std::string& instance() const override { return me_; }
  void Fenced(uint32_t shard, int64_t epoch) override {
    std::lock_guard lock(mu_);
    fenced_.emplace_back(shard, epoch);
    if (auto it = held_.find(shard); it != held_.end() && it->second == epoch) held_.erase(it);
  }

  void Hold(uint32_t shard, int64_t epoch) {
    std::lock_guard lock(mu_);
    held_[shard] = epoch;
  }
  void Drop(uint32_t shard) {
    std::lock_guard lock(mu_);
    held_.erase(shard);
  }
  std::vector<std::pair<uint32_t, int64_t>> fenced() const {
    std::lock_guard lock(mu_);
    return fenced_;
  }

 private:
  mutable std::mutex mu_;
  const std::string me_ = "me";
  std::map<uint32_t, int64_t> held_;
  std::vector<std::pair<uint32_t, int64_t>> fenced_;
};

// A memory store with a lease table: a fenced reservation commits only if
// the table says the fence's owner holds the shard at the fence's epoch.
class FencedMemoryStore final : public ForwardingSegmentStore {
 public:
  FencedMemoryStore() : ForwardingSegmentStore(memory_) {}
  void SetLease(uint32_t shard, std::string owner, int64_t epoch) {
    std::lock_guard lock(mu_);
    leases_[shard] = {std::move(owner), epoch};
  }
  int fenced_calls() const { return fenced_calls_; }

  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override {
    ++fenced_calls_;
    {
      std::lock_guard lock(mu_);
      auto it = leases_.find(fence.shard);
      if (it == leases_.end() || it->second.first != fence.owner ||
          it->second.second != fence.epoch) {
        return MakeError(ErrorCode::kNotServing, "fenced");
      }
    }
    return memory_.Reserve(key, step);
  }

 private:
  MemoryStore memory_;
  std::mutex mu_;
  std::map<uint32_t, std::pair<std::string, int64_t>> leases_;
  int fenced_calls_ = 0;
};

struct Fixture {
  FakeGate gate;
  FencedMemoryStore store;
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<SegmentAllocator> alloc;
  const std::string key = "k";
  const uint32_t shard = ShardOf("k", kShards);

  Fixture() {
    AllocatorOptions o;
    o.gate = &gate;
    o.prefetch_fraction = 0.9;  // no prefetch in these small segments
    alloc = std::make_unique<SegmentAllocator>(store, db, clock,
                                               KeyRules(std::vector<AutoKeyRule>{}), o);
    REQUIRE(store.CreateKey(key, 10, ""));
  }
  TakeOutcome Take(int64_t count = 1) {
    TakeOutcome o;
    alloc->Take(key, count, o.Callback());
    db.RunAll();
    return o;
  }
};

}  // namespace

TEST_CASE("cluster allocator: a key whose shard is not held is refused with kWrongOwner") {
  Fixture f;
  TakeOutcome o = f.Take();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kWrongOwner);
  CHECK(f.store.fenced_calls() == 0);  // nothing reserved for it
}

TEST_CASE("cluster allocator: reservations are fenced with the shard's epoch") {
  Fixture f;
  f.gate.Hold(f.shard, 1);
  f.store.SetLease(f.shard, "me", 1);
  TakeOutcome o = f.Take();
  REQUIRE(o.batch);
  CHECK(o.batch->ranges[0] == IdRange{1, 1});
  CHECK(f.store.fenced_calls() == 1);
}

TEST_CASE("cluster allocator: IDs buffered under a lost epoch are never served") {
  Fixture f;
  f.gate.Hold(f.shard, 1);
  f.store.SetLease(f.shard, "me", 1);
  REQUIRE(f.Take().batch);  // 1..10 buffered, 1 served
  // Lost: another owner (epoch 2) reserves and serves 11..20; we get the
  // shard back at epoch 3.
  f.gate.Drop(f.shard);
  CHECK(f.Take().error->code == ErrorCode::kWrongOwner);
  f.store.SetLease(f.shard, "other", 2);
  REQUIRE(f.store.Reserve(f.key, std::nullopt));  // the other owner's 11..20
  f.gate.Hold(f.shard, 3);
  f.store.SetLease(f.shard, "me", 3);
  TakeOutcome o = f.Take();
  REQUIRE(o.batch);
  // Not 2 (left in the epoch-1 buffer): above everything the other owner had.
  CHECK(o.batch->ranges[0].first == 21);
}

TEST_CASE("cluster allocator: a key handle stops at a lost epoch too") {
  Fixture f;
  f.gate.Hold(f.shard, 1);
  f.store.SetLease(f.shard, "me", 1);
  REQUIRE(f.Take().batch);  // 1..10 buffered, 1 served (it waited for them)
  REQUIRE(f.Take().batch);  // 2: the first take after the wait goes through the lock
  KeyHandle h = f.alloc->Handle(f.key);
  CHECK(f.alloc->TryTake(h, 1) == 3);  // from memory, without the lock
  f.gate.Drop(f.shard);
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // not held: the buffer is not served
  f.store.SetLease(f.shard, "other", 2);
  REQUIRE(f.store.Reserve(f.key, std::nullopt));  // the other owner's 11..20
  f.gate.Hold(f.shard, 3);
  f.store.SetLease(f.shard, "me", 3);
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // held again, but the buffer is epoch 1's
  TakeOutcome o;
  f.alloc->Take(h, 1, o.Callback());
  f.db.RunAll();
  REQUIRE(o.batch);
  CHECK(o.batch->ranges[0].first == 21);  // it waited for them
  CHECK_FALSE(f.alloc->TryTake(h, 1));    // so the next take starts the rate window
  TakeOutcome next;
  f.alloc->Take(h, 1, next.Callback());
  REQUIRE(next.batch);
  CHECK(next.batch->ranges[0].first == 22);
  CHECK(f.alloc->TryTake(h, 1) == 23);
}

TEST_CASE("cluster allocator: a fenced-out reservation serves nothing and stops the shard") {
  Fixture f;
  f.gate.Hold(f.shard, 1);
  f.store.SetLease(f.shard, "me", 1);
  TakeOutcome all;
  f.alloc->Take(f.key, 10, all.Callback());  // the whole first segment...
  REQUIRE(f.db.RunOne());
  REQUIRE(all.batch);
  REQUIRE(f.db.pending() == 1);           // ...and the next one is being reserved
  f.store.SetLease(f.shard, "other", 2);  // taken over; our gate does not know yet
  f.db.RunAll();                          // the fence refuses the reservation
  REQUIRE(f.gate.fenced().size() == 1);
  CHECK(f.gate.fenced()[0] == std::pair<uint32_t, int64_t>{f.shard, 1});
  CHECK_FALSE(f.gate.Check(f.key).serving());
  TakeOutcome o = f.Take();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kWrongOwner);
  // Regained later at epoch 3: the refused attempt reserved nothing, so the
  // key continues at 11.
  f.gate.Hold(f.shard, 3);
  f.store.SetLease(f.shard, "me", 3);
  TakeOutcome again = f.Take();
  REQUIRE(again.batch);
  CHECK(again.batch->ranges[0].first == 11);
}

TEST_CASE("cluster allocator: a reservation that lands after the epoch changed is dropped") {
  Fixture f;
  f.gate.Hold(f.shard, 1);
  f.store.SetLease(f.shard, "me", 1);
  TakeOutcome first;
  f.alloc->Take(f.key, 1, first.Callback());  // reservation queued at epoch 1
  // Before it runs: lost and regained at epoch 2 (someone else may have
  // served in between), and a new request arrives.
  f.gate.Hold(f.shard, 2);
  TakeOutcome second;
  f.alloc->Take(f.key, 1, second.Callback());
  REQUIRE(f.db.RunOne());    // the epoch-1 reservation commits (the row still says 1)...
  CHECK_FALSE(first.batch);  // ...but is dropped
  f.store.SetLease(f.shard, "me", 2);
  f.db.RunAll();  // the epoch-2 reservation serves both
  REQUIRE(first.batch);
  REQUIRE(second.batch);
  CHECK(first.batch->ranges[0].first >= 11);
  CHECK(second.batch->ranges[0].first >= 11);
  CHECK(first.batch->ranges[0].first != second.batch->ranges[0].first);
}

namespace {

Result<AppendOutcome> SendNow(MessageService& service, std::string conv, std::string cmid) {
  std::promise<Result<AppendOutcome>> p;
  auto f = p.get_future();
  service.Send({std::move(conv), "u1", std::move(cmid), 1, "hi"},
               [&p](Result<AppendOutcome> r) { p.set_value(std::move(r)); });
  return f.get();
}

}  // namespace

TEST_CASE("cluster messages: only held shards are stored, fenced batches store nothing") {
  FakeGate gate;
  MemoryMessageStore store;
  MemoryStore ids;
  std::map<uint32_t, int64_t> lease;  // the fake lease table: shard -> our epoch
  std::mutex lease_mu;
  store.SetFenceCheck([&](const ShardFence& f) {
    std::lock_guard lock(lease_mu);
    auto it = lease.find(f.shard);
    return f.owner == "me" && it != lease.end() && it->second == f.epoch;
  });
  MessageServiceOptions o;
  o.writers = 1;
  o.gate = &gate;
  MessageService service(store, ids, o);
  const std::string conv = "c1";
  const uint32_t shard = ShardOf(conv, kShards);

  // Not held: refused, nothing stored.
  auto refused = SendNow(service, conv, "m1");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::kWrongOwner);
  CHECK(store.MaxSeq(conv).value() == 0);

  // Held and fenced at our epoch: stored.
  gate.Hold(shard, 4);
  {
    std::lock_guard lock(lease_mu);
    lease[shard] = 4;
  }
  auto stored = SendNow(service, conv, "m2");
  REQUIRE(stored);
  CHECK(stored->seq == 1);

  // Taken over behind our back: the batch is refused by its fence, nothing
  // is stored, the shard stops serving here.
  {
    std::lock_guard lock(lease_mu);
    lease[shard] = 5;
  }
  auto fenced = SendNow(service, conv, "m3");
  REQUIRE_FALSE(fenced);
  CHECK(fenced.error().code == ErrorCode::kWrongOwner);
  CHECK(store.MaxSeq(conv).value() == 1);
  REQUIRE(gate.fenced().size() == 1);
  CHECK(gate.fenced()[0] == std::pair<uint32_t, int64_t>{shard, 4});
  CHECK_FALSE(gate.Check(conv).serving());
  service.Shutdown();
}
