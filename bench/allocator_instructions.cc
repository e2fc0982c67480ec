// N takes on one key from one thread, for instruction counts under
// callgrind (bench/allocator_instructions.sh): unlike allocator_bench's
// items/s, the count per take repeats exactly whatever else the machine is
// doing, so two builds can be compared within a few percent on a loaded
// host. Same setup as allocator_bench (a memory store, a large step, a
// ManualClock), but reservations run on a ManualRunner, drained by the loop
// every kDrainEvery takes: one thread, so the same instructions every run.
//
//   allocator_instructions MODE N   MODE: by_name | handle | take | take100
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <string_view>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "storage/memory/memory_store.h"

namespace seqd {
namespace {

constexpr char kKey[] = "key";
constexpr long kDrainEvery = 4096;
std::atomic<int64_t> g_sink{0};

void Keep(Result<IdBatch> r) {
  if (r) g_sink.store(r->ranges.front().first, std::memory_order_relaxed);
}

struct Env {
  MemoryStore store;
  ManualRunner db;
  ManualClock clock;
  SegmentAllocator allocator{store, db, clock, KeyRules(), Options()};

  static AllocatorOptions Options() {
    AllocatorOptions o;
    o.max_step = 100'000'000;
    return o;
  }
  Env() {
    if (!store.CreateKey(kKey, 1'000'000, "bench")) std::abort();
    std::promise<bool> first;
    allocator.Take(kKey, 1, [&first](Result<IdBatch> r) { first.set_value(r.ok()); });
    db.RunAll();
    if (!first.get_future().get()) std::abort();
  }
  // Runs the reservations the takes started.
  void Drain(long i) {
    if (i % kDrainEvery == 0) db.RunAll();
  }
};

// The measured loops: callgrind_annotate reports each one's inclusive count.
__attribute__((noinline)) void LoopByName(Env& env, long n) {
  for (long i = 0; i < n; ++i) {
    env.Drain(i);
    if (std::optional<int64_t> first = env.allocator.TryTake(kKey, 1)) {
      g_sink.store(*first, std::memory_order_relaxed);
      continue;
    }
    env.allocator.Take(kKey, 1, Keep);
  }
}

__attribute__((noinline)) void LoopHandle(Env& env, long n) {
  KeyHandle handle = env.allocator.Handle(kKey);
  for (long i = 0; i < n; ++i) {
    env.Drain(i);
    if (std::optional<int64_t> first = env.allocator.TryTake(handle, 1)) {
      g_sink.store(*first, std::memory_order_relaxed);
      continue;
    }
    env.allocator.Take(handle, 1, Keep);
  }
}

__attribute__((noinline)) void LoopTake(Env& env, long n, int64_t count) {
  for (long i = 0; i < n; ++i) {
    env.Drain(i);
    env.allocator.Take(kKey, count, Keep);
  }
}

}  // namespace
}  // namespace seqd

int main(int argc, char** argv) {
  using namespace seqd;
  if (argc != 3) {
    std::fprintf(stderr, "usage: allocator_instructions by_name|handle|take|take100 N\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  const long n = std::atol(argv[2]);
  Env env;
  if (mode == "by_name") {
    LoopByName(env, n);
  } else if (mode == "handle") {
    LoopHandle(env, n);
  } else if (mode == "take") {
    LoopTake(env, n, 1);
  } else if (mode == "take100") {
    LoopTake(env, n, 100);
  } else {
    std::fprintf(stderr, "allocator_instructions: unknown mode %s\n", argv[1]);
    return 2;
  }
  return 0;
}
