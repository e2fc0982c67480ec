// Hot path of SegmentAllocator next to a bare atomic counter, in one binary
// so a single run compares them side by side: take by name (Take) and by
// KeyHandle (TryTake, falling back to Take). Goals: handle >=
// 0.5x fetch_add, by name >= 0.2x, at 1 and 2 threads.
//
// The key has a large step (1,000,000, growing to max_step) and reservations
// run on a one-thread runner, so almost every Take is served from memory.
// Time is a ManualClock that never advances: deadlines never fire and every
// reservation counts as "fast", so the dynamic step climbs to max_step.
//
// Multi-threaded cases use real time, so items/s is the aggregate throughput
// of all threads on one shared key (or one shared atomic).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "storage/memory/memory_store.h"

namespace seqd {
namespace {

constexpr char kKey[] = "key";
constexpr int64_t kTableStep = 1'000'000;

// One allocator shared by every benchmark thread, built on first use.
struct Env {
  MemoryStore store;
  ThreadPoolRunner db{1};
  ManualClock clock;
  SegmentAllocator allocator{store, db, clock, KeyRules(), Options()};

  static AllocatorOptions Options() {
    AllocatorOptions o;
    o.max_step = 100'000'000;
    return o;
  }

  Env() {
    if (!store.CreateKey(kKey, kTableStep, "bench")) Die("CreateKey failed");
    // The first Take parks until the first reservation lands; wait for it.
    std::promise<bool> first;
    allocator.Take(kKey, 1, [&first](Result<IdBatch> r) { first.set_value(r.ok()); });
    if (!first.get_future().get()) Die("first Take failed");
  }
  ~Env() { db.Stop(); }  // reservations in flight finish before the allocator goes

  [[noreturn]] static void Die(const char* what) {
    std::fprintf(stderr, "allocator_bench: %s\n", what);
    std::abort();
  }
};

Env& GetEnv() {
  static Env env;
  return env;
}

std::atomic<int64_t> g_counter{0};

void BM_AtomicFetchAdd(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(g_counter.fetch_add(1));
  }
  state.SetItemsProcessed(state.iterations());
}

// Where callbacks put the IDs: one cache line per benchmark thread. Global,
// so a parked Take completing late on the runner thread never writes freed
// memory. Atomic because that completion happens on another thread.
struct alignas(64) Sink {
  std::atomic<int64_t> id{0};
};
Sink g_sinks[16];
std::atomic<bool> g_take_failed{false};

// Take(key, count, cb) where cb only stores the first ID. The capture is one
// pointer, so std::function keeps it in its small buffer (no allocation).
void TakeLoop(benchmark::State& state, int64_t count) {
  SegmentAllocator& allocator = GetEnv().allocator;
  Sink* out = &g_sinks[state.thread_index() % 16];
  for (auto _ : state) {
    allocator.Take(kKey, count, [out](Result<IdBatch> r) {
      if (!r) return g_take_failed.store(true, std::memory_order_relaxed);
      out->id.store(r->ranges.front().first, std::memory_order_relaxed);
    });
  }
  if (g_take_failed.load()) state.SkipWithError("Take failed");
  state.SetItemsProcessed(state.iterations() * count);
}

// A KeyHandle per thread: TryTake (one compare-and-swap) while the current
// segment lasts, Take(handle) past its prefetch point.
void HandleLoop(benchmark::State& state, int64_t count) {
  SegmentAllocator& allocator = GetEnv().allocator;
  KeyHandle handle = allocator.Handle(kKey);
  Sink* out = &g_sinks[state.thread_index() % 16];
  for (auto _ : state) {
    if (std::optional<int64_t> first = allocator.TryTake(handle, count)) {
      benchmark::DoNotOptimize(*first);
      continue;
    }
    allocator.Take(handle, count, [out](Result<IdBatch> r) {
      if (!r) return g_take_failed.store(true, std::memory_order_relaxed);
      out->id.store(r->ranges.front().first, std::memory_order_relaxed);
    });
  }
  if (g_take_failed.load()) state.SkipWithError("Take failed");
  state.SetItemsProcessed(state.iterations() * count);
}

// By name without a callback: TryTake(key) (the thread's handle cache),
// falling back to Take.
void BM_TryTakeByName(benchmark::State& state) {
  SegmentAllocator& allocator = GetEnv().allocator;
  Sink* out = &g_sinks[state.thread_index() % 16];
  for (auto _ : state) {
    if (std::optional<int64_t> first = allocator.TryTake(kKey, 1)) {
      benchmark::DoNotOptimize(*first);
      continue;
    }
    allocator.Take(kKey, 1, [out](Result<IdBatch> r) {
      if (!r) return g_take_failed.store(true, std::memory_order_relaxed);
      out->id.store(r->ranges.front().first, std::memory_order_relaxed);
    });
  }
  if (g_take_failed.load()) state.SkipWithError("Take failed");
  state.SetItemsProcessed(state.iterations());
}

void BM_AllocatorTake(benchmark::State& state) { TakeLoop(state, 1); }
void BM_HandleTake(benchmark::State& state) { HandleLoop(state, 1); }
void BM_AllocatorTakeBatch100(benchmark::State& state) { TakeLoop(state, 100); }

void Setup(const benchmark::State&) { GetEnv(); }

BENCHMARK(BM_AtomicFetchAdd)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_AllocatorTake)->Setup(Setup)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_TryTakeByName)->Setup(Setup)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_HandleTake)->Setup(Setup)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_AllocatorTakeBatch100)->Setup(Setup)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace seqd

BENCHMARK_MAIN();
