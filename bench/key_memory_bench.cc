// Memory per key held by the allocator: RSS before and after bringing N keys
// into memory (one Take each, rows created beforehand so the store's own
// memory is counted before), divided by N. Run: bench/key_memory_bench.sh
//
//   key_memory_bench [N]   (default 1,000,000)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "server/base/log.h"
#include "server/base/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "storage/memory/memory_store.h"

namespace {

// Resident set size of this process, bytes.
long long RssBytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace seqd;
  const long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: key_memory_bench [KEYS]\n");
    return 2;
  }
  SetLogLevel(LogLevel::kWarn);  // not a line per reservation
  MemoryStore store;
  std::vector<NewKey> rows;
  rows.reserve(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) rows.push_back(NewKey{"sg_" + std::to_string(i), 100});
  if (!store.CreateKeys(rows, "")) return 1;
  rows.clear();
  rows.shrink_to_fit();

  ManualRunner db;
  ManualClock clock;
  AllocatorOptions options;  // the defaults, with room for every key
  options.max_cached_keys = static_cast<size_t>(n);
  SegmentAllocator alloc(store, db, clock, KeyRules(DefaultAutoKeyRules()), options);

  const long long before = RssBytes();
  long failed = 0;
  const long chunk = 1000;  // one reservation batch
  for (long at = 0; at < n; at += chunk) {
    for (long i = at; i < std::min(n, at + chunk); ++i) {
      alloc.Take("sg_" + std::to_string(i), 1,
                 [&failed](const Result<IdBatch>& r) { failed += !r; });
    }
    db.RunAll();
    // A second later, as in a server: the requests' deadline timers fire
    // (no-ops, they were answered) and free what they hold.
    clock.Advance(options.wait_deadline);
  }
  const long long after = RssBytes();
  const long long held = alloc.stats().keys_in_memory;
  std::printf(
      "{\"keys\":%ld,\"keys_in_memory\":%lld,\"failed\":%ld,\"rss_before_bytes\":%lld,"
      "\"rss_after_bytes\":%lld,\"bytes_per_key\":%.1f}\n",
      n, held, failed, before, after, static_cast<double>(after - before) / static_cast<double>(n));
  return failed == 0 && held == n ? 0 : 1;
}
