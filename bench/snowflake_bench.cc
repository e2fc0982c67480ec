// SnowflakeGenerator::Next next to a Leaf-style generator (one mutex, read
// the clock per ID, spin to the next millisecond when the sequence runs
// out), in one binary so a single run compares them side by side.
//
// Two layouts:
//   leaf  41/10/12: at most 4,096 IDs per millisecond per worker id, so both
//         hit the same ceiling (~4.1M IDs/s); this shows what waiting for the
//         next millisecond costs (seqd parks the request on a timer; the
//         Leaf-style one spins while holding its lock).
//   wide  41/4/18: 262,144 per millisecond, so the cost per ID shows.
// The generator holds a grant for an hour and the real clocks run: its
// timers fire on one io_context thread.
#include <benchmark/benchmark.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "server/base/asio_clock.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"

namespace seqd {
namespace {

SnowflakeLayout Layout(int64_t which) {
  return which == 0 ? SnowflakeLayout{41, 10, 12, SnowflakeLayout::kLeafEpochMs}
                    : SnowflakeLayout{41, 4, 18, SnowflakeLayout::kLeafEpochMs};
}

// One generator per layout, shared by every benchmark thread.
struct Env {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);
  std::thread timers{[this] { io.run(); }};
  AsioClock clock{io};
  SystemWallClock wall;
  std::unique_ptr<SnowflakeGenerator> gen[2];

  Env() {
    for (int i = 0; i < 2; ++i) {
      SnowflakeOptions o;
      o.layout = Layout(i);
      o.max_count = 1000;
      gen[i] = std::make_unique<SnowflakeGenerator>(wall, clock, o);
      gen[i]->Grant(3, 0, wall.NowMs() + 3'600'000, clock.Now() + std::chrono::hours(1));
    }
  }
  ~Env() {
    work.reset();
    io.stop();
    timers.join();
  }
};

Env& Shared() {
  static Env env;
  return env;
}

// Next(count), waiting for the answer if it was parked.
int64_t Take(SnowflakeGenerator& gen, int64_t count) {
  std::atomic<bool> done{false};
  int64_t first = -1;
  gen.Next(count, [&](Result<SnowflakeIds> r) {
    if (r) first = r->front();
    done.store(true, std::memory_order_release);
    done.notify_one();
  });
  while (!done.load(std::memory_order_acquire)) done.wait(false, std::memory_order_acquire);
  if (first < 0) {
    std::fprintf(stderr, "snowflake Next failed\n");
    std::abort();
  }
  return first;
}

// Leaf's SnowflakeIDGenImpl.get(), in C++: a lock around the whole thing.
class LeafStyleSnowflake {
 public:
  explicit LeafStyleSnowflake(SnowflakeLayout layout) : layout_(layout) {}
  int64_t Next() {
    std::lock_guard lock(mu_);
    int64_t t = wall_.NowMs();
    if (t == last_) {
      sequence_ = (sequence_ + 1) & layout_.max_sequence();
      if (sequence_ == 0) {
        while ((t = wall_.NowMs()) <= last_) {
        }
      }
    } else {
      sequence_ = 0;
    }
    last_ = t;
    return layout_.Compose(t, 3, sequence_);
  }

 private:
  const SnowflakeLayout layout_;
  SystemWallClock wall_;
  std::mutex mu_;
  int64_t last_ = -1;
  int64_t sequence_ = 0;
};

LeafStyleSnowflake& SharedLeaf(int64_t which) {
  static LeafStyleSnowflake leaf[2] = {LeafStyleSnowflake(Layout(0)),
                                       LeafStyleSnowflake(Layout(1))};
  return leaf[which];
}

// Args: layout (0 leaf, 1 wide), IDs per request.
void BM_Seqd(benchmark::State& state) {
  SnowflakeGenerator& gen = *Shared().gen[state.range(0)];
  const int64_t count = state.range(1);
  for (auto _ : state) benchmark::DoNotOptimize(Take(gen, count));
  state.SetItemsProcessed(state.iterations() * count);
}

void BM_LeafStyle(benchmark::State& state) {
  LeafStyleSnowflake& leaf = SharedLeaf(state.range(0));
  const int64_t count = state.range(1);
  for (auto _ : state) {
    for (int64_t i = 0; i < count; ++i) benchmark::DoNotOptimize(leaf.Next());
  }
  state.SetItemsProcessed(state.iterations() * count);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t layout : {0, 1}) {
    for (int64_t count : {1, 100}) b->Args({layout, count});
  }
  b->ArgNames({"layout", "count"})->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_Seqd)->Apply(Args);
BENCHMARK(BM_LeafStyle)->Apply(Args);

}  // namespace
}  // namespace seqd

BENCHMARK_MAIN();
