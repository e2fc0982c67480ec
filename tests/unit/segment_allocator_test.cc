// Allocator behaviour with a fake store, a manual database runner and a
// manual clock: every step is driven by the test.
#include "server/core/segment_allocator.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <set>
#include <thread>

#include "tests/unit/allocator_fixture.h"
#include "tests/unit/take_boundary.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

std::vector<IdRange> Ranges(const IdBatch& b) { return {b.ranges.begin(), b.ranges.end()}; }

struct Fixture : AllocatorFixture {
  using AllocatorFixture::AllocatorFixture;

  // Takes and runs the database until the request completes.
  TakeOutcome TakeNow(std::string_view key, int64_t count = 1) {
    TakeOutcome o;
    alloc->Take(key, count, o.Callback());
    db.RunAll();
    return o;
  }

  // Takes without running the database; true if answered from memory.
  bool TakeNowNoRun(std::string_view key, int64_t count) {
    TakeOutcome o;
    alloc->Take(key, count, o.Callback());
    return o.batch.has_value();
  }

  int64_t One(std::string_view key) {
    TakeOutcome o = TakeNow(key);
    REQUIRE(o.batch);
    REQUIRE(o.batch->ranges.size() == 1);
    return o.batch->ranges[0].first;
  }
};

}  // namespace

TEST_CASE("first request parks until the first segment lands, later ones are served inline") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("order", 100, ""));
  TakeOutcome first;
  f.alloc->Take("order", 1, first.Callback());
  CHECK_FALSE(first.called());  // parked: nothing in memory yet
  CHECK(f.alloc->stats().parked_now == 1);
  CHECK(f.db.RunAll() == 1);
  REQUIRE(first.batch);
  CHECK(first.batch->ranges[0] == IdRange{1, 1});
  TakeOutcome second;
  f.alloc->Take("order", 1, second.Callback());
  CHECK(second.called());  // served inline, no database
  CHECK(second.batch->ranges[0] == IdRange{2, 2});
  CHECK(f.alloc->stats().parked_now == 0);
}

TEST_CASE("first requests for new keys share store batches, not a transaction each") {
  AllocatorOptions options;
  options.reservation_flushes = 1;
  Fixture f(options, {{"sg_", 100}});
  constexpr int kKeys = 2500;  // 1000 + 1000 + 500
  std::vector<TakeOutcome> outs(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    f.alloc->Take("sg_" + std::to_string(i), 1, outs[i].Callback());
  }
  CHECK(f.db.pending() == 1);  // one flush queued; the other keys wait for it
  f.db.RunAll();
  for (int i = 0; i < kKeys; ++i) {
    CAPTURE(i);
    REQUIRE(outs[i].batch);
    CHECK(Ranges(*outs[i].batch) == std::vector<IdRange>{{1, 1}});
  }
  // Per batch: one ReserveMany that creates the rows and reserves their
  // first segments (one transaction on SQLite and MariaDB; this fake store
  // creates through CreateKeys inside it), never a reserve that fails first.
  CHECK(f.store.reserve_batches() == 3);
  CHECK(f.store.create_batches() == 3);
  auto row = f.memory.GetKey("sg_2499");
  REQUIRE(row);
  CHECK(row->step == 100);
  CHECK(row->max_id == 101);
  CHECK(f.alloc->stats().parked_now == 0);
}

TEST_CASE("reservations waiting for the store are bounded; the refused ones retry") {
  AllocatorOptions options;
  options.max_cached_keys = 1000;  // the bound: one waiting reservation per key held
  options.wait_deadline = 10s;
  Fixture f(options, {{"sg_", 10}});
  constexpr int kKeys = 1500;
  std::vector<TakeOutcome> outs(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    f.alloc->Take("sg_" + std::to_string(i), 1, outs[i].Callback());
  }
  // Nothing ran yet: 1000 wait for a batch, 500 were refused and will retry.
  CHECK(f.alloc->stats().reservation_failures == 500);
  auto refused = f.alloc->SnapshotKey("sg_1499");
  REQUIRE(refused);
  CHECK_FALSE(refused->loading);
  REQUIRE(refused->last_error);
  f.db.RunAll();
  int answered = 0;
  for (const TakeOutcome& o : outs) answered += o.called();
  CHECK(answered == 1000);
  f.clock.Advance(options.retry_backoff);  // the retries queue their reservations
  f.db.RunAll();
  for (int i = 0; i < kKeys; ++i) {
    CAPTURE(i);
    REQUIRE(outs[i].batch);
    CHECK(Ranges(*outs[i].batch) == std::vector<IdRange>{{1, 1}});
  }
}

TEST_CASE("a batch mixes keys that exist, new auto-created keys and unknown keys") {
  Fixture f({}, {{"sg_", 10}});
  REQUIRE(f.memory.CreateKey("order", 50, ""));
  TakeOutcome order, fresh, unknown, refused_twice;
  f.alloc->Take("order", 3, order.Callback());
  f.alloc->Take("sg_new", 2, fresh.Callback());
  f.alloc->Take("nope", 1, unknown.Callback());
  f.db.RunAll();
  REQUIRE(order.batch);
  CHECK(Ranges(*order.batch) == std::vector<IdRange>{{1, 3}});
  REQUIRE(fresh.batch);
  CHECK(Ranges(*fresh.batch) == std::vector<IdRange>{{1, 2}});
  REQUIRE(unknown.error);
  CHECK(unknown.error->code == ErrorCode::kUnknownKey);
  CHECK_FALSE(f.memory.GetKey("nope"));  // never created: no rule matches
}

TEST_CASE("the next segment is reserved once more than the prefetch fraction is used") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  f.One("k");  // loads [1,100], uses 1
  for (int i = 0; i < 9; ++i) f.alloc->Take("k", 1, [](Result<IdBatch>) {});
  CHECK(f.db.pending() == 0);  // 10 used: not more than 10%
  f.alloc->Take("k", 1, [](Result<IdBatch>) {});
  CHECK(f.db.pending() == 1);  // 11 used: reserve next
  for (int i = 0; i < 20; ++i) f.alloc->Take("k", 1, [](Result<IdBatch>) {});
  CHECK(f.db.pending() == 1);  // at most one reservation in flight
  f.db.RunAll();
  auto snap = f.alloc->SnapshotKey("k");
  REQUIRE(snap);
  CHECK(snap->next.ready);
  CHECK(snap->next.first == 101);
  CHECK(snap->next.last == 200);
  CHECK(f.store.reserve_calls() == 2);
}

TEST_CASE("switching to the next segment keeps IDs contiguous; batches span both") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  TakeOutcome a = f.TakeNow("k", 95);
  REQUIRE(a.batch);
  CHECK(Ranges(*a.batch) == std::vector<IdRange>{{1, 95}});
  f.db.RunAll();  // next segment [101, 200] ready
  TakeOutcome b;
  f.alloc->Take("k", 10, b.Callback());
  REQUIRE(b.batch);  // inline: spans the switch
  CHECK(Ranges(*b.batch) == std::vector<IdRange>{{96, 105}});
  CHECK(b.batch->count() == 10);
  CHECK(f.alloc->SnapshotKey("k")->current.first == 101);
}

TEST_CASE("a batch spanning segments of another process gets two ranges") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  f.One("k");                                      // loads [1,100]
  f.alloc->Take("k", 49, [](Result<IdBatch>) {});  // 50 used: prefetch posted, not run
  CHECK(f.db.pending() == 1);
  REQUIRE(f.memory.Reserve("k", std::nullopt));  // another process takes [101,200]
  f.db.RunAll();                                 // ours is [201,300]
  TakeOutcome b;
  f.alloc->Take("k", 60, b.Callback());
  REQUIRE(b.batch);
  CHECK(Ranges(*b.batch) == std::vector<IdRange>{{51, 100}, {201, 210}});
}

TEST_CASE("a parked request is woken when the reservation lands") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  f.TakeNow("k", 1);
  // Consume the rest without letting the prefetch run.
  TakeOutcome rest;
  f.alloc->Take("k", 9, rest.Callback());
  REQUIRE(rest.batch);
  TakeOutcome parked;
  f.alloc->Take("k", 3, parked.Callback());
  CHECK_FALSE(parked.called());
  CHECK(f.alloc->SnapshotKey("k")->parked == 1);
  f.db.RunAll();
  REQUIRE(parked.batch);
  CHECK(Ranges(*parked.batch) == std::vector<IdRange>{{11, 13}});
  CHECK(parked.calls == 1);
  f.clock.Advance(2s);  // the deadline timer fires but must not call again
  CHECK(parked.calls == 1);
}

TEST_CASE("a parked request fails with store_unavailable at the deadline, exactly once") {
  AllocatorOptions o;
  o.wait_deadline = 1s;
  Fixture f(o);
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  TakeOutcome parked;
  f.alloc->Take("k", 1, parked.Callback());
  f.clock.Advance(999ms);
  CHECK_FALSE(parked.called());
  f.clock.Advance(1ms);
  REQUIRE(parked.error);
  CHECK(parked.error->code == ErrorCode::kStoreUnavailable);
  CHECK(f.alloc->stats().timeouts == 1);
  f.db.RunAll();  // the reservation lands late: no second call
  CHECK(parked.calls == 1);
  CHECK(f.One("k") == 1);  // the late segment serves the next request
}

TEST_CASE("store down: buffers serve, then 503; after recovery service resumes") {
  AllocatorOptions o;
  o.retry_backoff = 100ms;
  Fixture f(o);
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  CHECK(f.One("k") == 1);
  f.store.SetDown(true);
  f.db.RunAll();                                         // prefetch fails
  for (int i = 2; i <= 10; ++i) CHECK(f.One("k") == i);  // the buffer still serves
  TakeOutcome parked;
  f.alloc->Take("k", 1, parked.Callback());
  f.db.RunAll();
  CHECK_FALSE(parked.called());
  f.clock.Advance(1s);
  REQUIRE(parked.error);
  CHECK(parked.error->code == ErrorCode::kStoreUnavailable);
  CHECK(parked.error->message.find("store down") == std::string::npos);  // no store internals
  // Admin views show the public text too: the store's own is for the log.
  CHECK(f.alloc->SnapshotKey("k")->last_error.value_or("") == "store unavailable, retry later");
  f.store.SetDown(false);
  TakeOutcome later;
  f.alloc->Take("k", 1, later.Callback());
  f.clock.Advance(200ms);  // past the retry backoff
  f.db.RunAll();
  REQUIRE(later.batch);
  CHECK(later.batch->ranges[0].first > 10);
}

TEST_CASE("a row's step of 2^31 or more is reserved exactly; max_step stays below 2^31") {
  // Keys keep their dynamic step in 32 bits (KeyState::step32).
  AllocatorOptions o;
  o.prefetch_fraction = 0.0;      // the next reservation is posted at once
  o.max_step = int64_t{1} << 40;  // taken as 2^31 - 2
  Fixture f(o);
  CHECK(f.alloc->options().max_step == (int64_t{1} << 31) - 2);
  constexpr int64_t kBig = 3'000'000'000;  // a row set by SQL: above any max_step
  REQUIRE(f.memory.CreateKey("big", kBig, ""));
  CHECK(f.One("big") == 1);  // reservation 1: the row's own step
  f.db.RunAll();             // reservation 2, sized by the allocator
  auto snap = f.alloc->SnapshotKey("big");
  REQUIRE(snap);
  CHECK(snap->table_step == kBig);
  CHECK(snap->step == kBig);
  CHECK(snap->current.last == kBig);
  CHECK(snap->next.step == kBig);
}

TEST_CASE("dynamic step doubles when segments go fast and halves when slow, within bounds") {
  AllocatorOptions o;
  o.segment_duration = 15min;
  o.max_step = 400;
  o.prefetch_fraction = 0.0;  // reserve the next as soon as a segment starts
  Fixture f(o);
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  auto consume_current = [&] {
    auto snap = f.alloc->SnapshotKey("k");
    int64_t left = snap ? snap->current.last - snap->current.next + 1 : 0;
    if (left > 0) f.TakeNow("k", left);
  };
  f.One("k");  // reservation 1: [1,100] (table step); posts reservation 2
  f.db.RunAll();
  CHECK(f.alloc->SnapshotKey("k")->next.step == 100);  // reservation 2 also uses table step
  // Fast: each segment lasts 1 minute → doubling up to max_step.
  std::vector<int64_t> steps;
  for (int i = 0; i < 4; ++i) {
    f.clock.Advance(1min);
    consume_current();
    f.One("k");  // switch; posts the next reservation
    f.db.RunAll();
    steps.push_back(f.alloc->SnapshotKey("k")->next.step);
  }
  CHECK(steps == std::vector<int64_t>{200, 400, 400, 400});
  // Between 15 and 30 minutes: unchanged.
  f.clock.Advance(20min);
  consume_current();
  f.One("k");
  f.db.RunAll();
  CHECK(f.alloc->SnapshotKey("k")->next.step == 400);
  // Slow: more than twice the duration → halve, never below the table step.
  steps.clear();
  for (int i = 0; i < 3; ++i) {
    f.clock.Advance(31min);
    consume_current();
    f.One("k");
    f.db.RunAll();
    steps.push_back(f.alloc->SnapshotKey("k")->next.step);
  }
  CHECK(steps == std::vector<int64_t>{200, 100, 100});
}

namespace {

// A cold key with table step 1,000: its first request waits 100 ms for
// [1, 1000]; after `pause` its client takes `ids_per_tick` IDs every 100 us
// until the prefetch point (10% used) posts reservation 2. Its step.
int64_t SecondStep(AllocatorOptions o, int64_t ids_per_tick,
                   Clock::Duration pause = Clock::Duration::zero()) {
  o.prefetch_fraction = 0.1;
  Fixture f(o);
  REQUIRE(f.memory.CreateKey("k", 1000, ""));
  TakeOutcome first;
  f.alloc->Take("k", 1, first.Callback());
  f.clock.Advance(100ms);
  REQUIRE(f.db.RunAll() == 1);  // [1, 1000] lands after 100 ms
  REQUIRE(first.batch);
  f.clock.Advance(pause);
  while (f.db.pending() == 0) {
    f.clock.Advance(100us);
    REQUIRE(f.TakeNowNoRun("k", ids_per_tick));
  }
  f.db.RunAll();
  return f.alloc->SnapshotKey("k")->next.step;
}

}  // namespace

TEST_CASE("a cold key's step comes from its measured rate and reservation latency") {
  // 100 ms from asking to landing; then 100,000 IDs/s. Doubling from 1,000
  // would need many reservations (each a stall); the second is big enough.
  AllocatorOptions o;
  // 10 IDs per 100 us: the rest of the segment (90%) must outlast four
  // reservations: 100k/s x 4 x 0.1 s / 0.9 = 44,445.
  const int64_t fast = SecondStep(o, 10);
  CHECK(fast >= 40'000);
  CHECK(fast <= 50'000);
  // A slow key keeps the table step: 1 ID per 100 us is 10k/s -> 4,445.
  const int64_t slower = SecondStep(o, 1);
  CHECK(slower >= 4'000);
  CHECK(slower <= 5'000);
  // min_runway: both buffers (1.9 steps) hold 10 s at 100k/s.
  o.min_runway = 10s;
  const int64_t runway = SecondStep(o, 10);
  CHECK(runway >= 500'000);
  CHECK(runway <= 560'000);
  // Capped by max_step.
  o.max_step = 200'000;
  CHECK(SecondStep(o, 10) == 200'000);
}

TEST_CASE("a cold key's rate is measured from the first take after its wait, not from landing") {
  // The client that waited takes 10 ms to ask again, then asks at 100,000
  // IDs/s. That pause is not the key's rate: the second step is sized as
  // without it (counting the pause it would be about 4,000).
  const int64_t step = SecondStep(AllocatorOptions{}, 10, 10ms);
  CHECK(step >= 40'000);
  CHECK(step <= 50'000);
}

TEST_CASE("a batch larger than the step reserves enough in one go") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  f.One("k");
  f.db.RunAll();  // next ready [11,20]
  TakeOutcome big = f.TakeNow("k", 500);
  REQUIRE(big.batch);
  CHECK(big.batch->count() == 500);
  CHECK(big.batch->ranges.front().first == 2);
  CHECK(f.store.reserve_calls() <= 4);
}

TEST_CASE("unknown keys, auto-created keys, bad keys and bad counts") {
  Fixture f({}, {{"sg_", 100}, {"si_", 50}});
  TakeOutcome unknown = f.TakeNow("nope");
  REQUIRE(unknown.error);
  CHECK(unknown.error->code == ErrorCode::kUnknownKey);
  CHECK_FALSE(f.alloc->SnapshotKey("nope"));

  TakeOutcome group = f.TakeNow("sg_team42");
  REQUIRE(group.batch);
  CHECK(group.batch->ranges[0].first == 1);
  auto row = f.memory.GetKey("sg_team42");
  REQUIRE(row);
  CHECK(row->step == 100);
  CHECK(f.memory.GetKey("si_a_b").ok() == false);
  CHECK(f.TakeNow("si_a_b").batch);
  CHECK(f.memory.GetKey("si_a_b")->step == 50);

  // Bad counts and keys are refused where every take is checked.
  TakeBoundary boundary(*f.alloc);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{10'001}, INT64_MAX}) {
    TakeOutcome o;
    boundary.router.Take({.key = "sg_team42", .count = bad}, o.Callback());
    REQUIRE(o.error);
    CHECK(o.error->code == ErrorCode::kInvalidArgument);
  }
  for (std::string bad :
       {std::string(), std::string(256, 'a'), std::string("a\tb"), std::string("a\xFF"),
        std::string("k\0x", 3), std::string("seqd.server_msg_id")}) {
    TakeOutcome o;
    boundary.router.Take({.key = bad, .count = 1}, o.Callback());
    REQUIRE(o.error);
    CHECK(o.error->code == ErrorCode::kInvalidArgument);
  }
  TakeOutcome max_len = f.TakeNow("sg_" + std::string(125, 'x'));
  CHECK(max_len.batch);
}

TEST_CASE("idle keys leave memory; IDs after reload are never reissued") {
  AllocatorOptions o;
  o.idle_timeout = 10min;
  Fixture f(o);
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  const int64_t before = f.One("k");
  f.clock.Advance(5min);
  CHECK(f.alloc->EvictIdle() == 0);
  f.clock.Advance(5min);
  CHECK(f.alloc->EvictIdle() == 1);
  CHECK(f.alloc->stats().keys_in_memory == 0);
  CHECK(f.One("k") > before + 99);  // a fresh segment
}

TEST_CASE("deleted rows leave memory on refresh; requests then get unknown_key") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  f.One("k");
  f.db.RunAll();
  f.memory.DeleteKey("k");
  std::optional<size_t> dropped;
  f.alloc->RefreshRegisteredKeys([&](Result<size_t> n) { dropped = *n; });
  f.db.RunAll();
  CHECK(dropped == size_t{1});
  TakeOutcome o = f.TakeNow("k");
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kUnknownKey);
}

TEST_CASE("shutdown fails parked requests and refuses new ones") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  TakeOutcome parked;
  f.alloc->Take("k", 1, parked.Callback());
  f.alloc->Shutdown();
  REQUIRE(parked.error);
  CHECK(parked.error->code == ErrorCode::kShuttingDown);
  TakeOutcome after;
  f.alloc->Take("k", 1, after.Callback());
  REQUIRE(after.error);
  CHECK(after.error->code == ErrorCode::kShuttingDown);
}

TEST_CASE("many threads: IDs unique and strictly increasing per thread") {
  MemoryStore store;
  REQUIRE(store.CreateKey("k", 50, ""));
  ThreadPoolRunner db(2);
  ManualClock clock;
  SegmentAllocator alloc(store, db, clock, KeyRules(), AllocatorOptions{});
  StopRunnerOnExit stop_db(db);  // before the allocator goes
  constexpr int kThreads = 4, kPerThread = 20000;
  std::vector<std::vector<int64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mutex mu;
      std::condition_variable cv;
      for (int i = 0; i < kPerThread; ++i) {
        bool done = false;
        alloc.Take("k", 1 + (i % 3), [&](Result<IdBatch> r) {
          REQUIRE(r.ok());
          std::lock_guard lock(mu);
          for (auto& range : r->ranges) {
            for (int64_t id = range.first; id <= range.last; ++id) got[t].push_back(id);
          }
          done = true;
          cv.notify_one();
        });
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return done; });
      }
    });
  }
  for (auto& th : threads) th.join();
  db.Stop();
  std::set<int64_t> all;
  size_t total = 0;
  for (auto& ids : got) {
    for (size_t i = 1; i < ids.size(); ++i) REQUIRE(ids[i] > ids[i - 1]);
    all.insert(ids.begin(), ids.end());
    total += ids.size();
  }
  CHECK(all.size() == total);
}

TEST_CASE("an unknown key is answered from memory for a while, then asked again") {
  Fixture f;
  TakeOutcome first = f.TakeNow("ghost");
  REQUIRE(first.error);
  CHECK(first.error->code == ErrorCode::kUnknownKey);
  const int64_t calls = f.store.reserve_calls();
  TakeOutcome again;
  f.alloc->Take("ghost", 1, again.Callback());
  REQUIRE(again.error);  // inline: no store round trip
  CHECK(again.error->code == ErrorCode::kUnknownKey);
  CHECK(f.store.reserve_calls() == calls);
  REQUIRE(f.memory.CreateKey("ghost", 10, ""));  // inserted behind our back (SQL)
  f.clock.Advance(1100ms);
  CHECK(f.One("ghost") == 1);

  TakeOutcome other = f.TakeNow("ghost2");
  REQUIRE(other.error);
  REQUIRE(f.memory.CreateKey("ghost2", 10, ""));
  f.alloc->OnKeyCreated("ghost2");  // what KeyAdmin does after creating a row
  CHECK(f.One("ghost2") == 1);
}
