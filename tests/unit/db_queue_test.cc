// The database queue is bounded: work it cannot queue fails at once
// (store_unavailable), never waiting behind the queue; snowflake lease
// renewals have a thread of their own and keep going meanwhile.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/snowflake/worker_lease_keeper.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"
#include "storage/memory/memory_worker_lease_store.h"
#include "storage/store_shedding.h"
#include "tests/unit/wait_for.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;

}  // namespace

TEST_CASE("db queue: a bounded runner refuses TryPost and sheds Post beyond its bound") {
  ThreadPoolRunner runner(1, 2);
  std::mutex gate;
  std::unique_lock hold(gate);
  std::atomic<int> ran{0};
  runner.Post([&] {
    std::lock_guard wait(gate);  // the one thread blocks here
    ++ran;
  });
  REQUIRE(WaitFor([&] { return runner.queued() == 0; }, 5s));  // taken by the thread
  CHECK(runner.TryPost([&] { ++ran; }));
  CHECK(runner.TryPost([&] { ++ran; }));
  CHECK_FALSE(runner.TryPost([&] { ++ran; }));  // full: dropped
  CHECK(runner.refused() == 1);
  // Post beyond the bound runs anyway, at once, on the overflow thread,
  // where store calls are shed.
  std::atomic<int> shed{-1};
  runner.Post([&] { shed = ShedThisThread() ? 1 : 0; });
  CHECK(WaitFor([&] { return shed.load() == 1; }, 5s));
  CHECK(runner.refused() == 2);
  CHECK(ran.load() == 0);
  hold.unlock();
  runner.Stop();
  CHECK(ran.load() == 3);
  CHECK_FALSE(ShedThisThread());
}

TEST_CASE(
    "db queue: a flood of new keys takes no queue slot; admin calls beyond the bound get "
    "store_unavailable at once; the snowflake lease renews") {
  // The segment store blocks every reservation: the one db thread is stuck
  // and the queue (4) fills.
  MemoryStore mem;
  REQUIRE(mem.CreateKey("k", 10, "").ok());
  auto faulty_owned = std::make_unique<FaultyStore>(mem);
  FaultyStore& faulty = *faulty_owned;
  SheddingSegmentStore store(std::move(faulty_owned));
  faulty.SetHold(true);
  ThreadPoolRunner db(1, 4);
  ManualClock clock;
  AllocatorOptions ao;
  ao.wait_deadline = 1000ms;
  ao.reservation_flushes = 1;
  SegmentAllocator allocator(store, db, clock, KeyRules({{"auto_", 100}}), ao);
  KeyAdmin admin(store, db, allocator);

  // The snowflake keeper, on its own runner, with its own lease store.
  ManualWallClock wall(1'790'000'000'000);
  ManualClock lease_clock;
  MemoryWorkerLeaseStore leases([&wall] { return wall.NowMs(); });
  SnowflakeGenerator gen(wall, lease_clock, SnowflakeOptions{});
  WorkerLeaseKeeper keeper(leases, lease_clock, wall, gen,
                           LeaseKeeperOptions{"host-a:8080", 4, 3000ms, 100ms});

  // The flood: 40 new keys at once. The first batch is stuck in the store;
  // the other 39 keys wait in the allocator for the next batch (one at a
  // time: reservation_flushes), which the stuck one posts when done.
  constexpr int kKeys = 40;
  std::mutex mu;
  std::vector<std::optional<Result<IdBatch>>> got(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    allocator.Take("auto_" + std::to_string(i), 1, [&, i](Result<IdBatch> r) {
      std::lock_guard lock(mu);
      got[i].emplace(std::move(r));
    });
  }
  REQUIRE(WaitFor([&] { return faulty.reserve_calls() == 1; }, 5s));
  CHECK(db.queued() == 0);
  CHECK(db.refused() == 0);
  // Key admin calls fill the 4 slots; beyond them, 503 at once.
  constexpr int kAdmin = 5;
  std::array<std::atomic<int>, kAdmin> admin_code;
  for (int i = 0; i < kAdmin; ++i) {
    admin_code[i] = -1;
    admin.GetKey("k", [&, i](Result<KeyRow> r) {
      admin_code[i] = r ? -2 : static_cast<int>(r.error().code);
    });
  }
  CHECK(WaitFor([&] { return db.refused() == 1; }, 5s));
  for (int i = 4; i < kAdmin; ++i) {
    CHECK(WaitFor([&] { return admin_code[i].load() != -1; }, 5s));
    CHECK(admin_code[i].load() == static_cast<int>(ErrorCode::kStoreUnavailable));
  }

  // Meanwhile the snowflake keeper claims and renews its worker id.
  keeper.Start();
  REQUIRE(WaitFor([&] { return keeper.status().worker_id >= 0; }, 5s));
  const int64_t first_expiry = keeper.status().expires_ms;
  for (int round = 0; round < 3; ++round) {
    const int64_t before = keeper.status().expires_ms;
    wall.Advance(1000);
    lease_clock.Advance(1000ms);
    // The keeper sets its next renewal timer after the previous renewal
    // returns, on its own thread: time keeps moving in small steps until
    // it fires (advancing once could land before the timer exists).
    CHECK(WaitFor(
        [&] {
          if (keeper.status().expires_ms > before) return true;
          wall.Advance(10);
          lease_clock.Advance(10ms);
          return false;
        },
        5s));
  }
  CHECK(keeper.status().expires_ms >= first_expiry + 3000);
  CHECK(keeper.status().last_error.empty());

  // The new keys' requests wait for the store until their deadline, then
  // are answered 503.
  {
    std::lock_guard lock(mu);
    for (auto& g : got) CHECK_FALSE(g.has_value());
  }
  clock.Advance(1500ms);
  CHECK(WaitFor(
      [&] {
        std::lock_guard lock(mu);
        int answered = 0;
        for (auto& g : got) answered += g.has_value();
        return answered == kKeys;
      },
      5s));
  {
    std::lock_guard lock(mu);
    for (auto& g : got) CHECK((!*g && g->error().code == ErrorCode::kStoreUnavailable));
  }
  CHECK(allocator.stats().timeouts == kKeys);
  gen.Shutdown();
  keeper.Stop();
  faulty.SetHold(false);
  allocator.Shutdown();
  db.Stop();
}

}  // namespace seqd
