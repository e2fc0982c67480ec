// The allocator's lock-free hot path: SegmentCursor on its own (attacked by
// readers racing a writer that replaces segments as fast as it can), and
// KeyHandle / take-by-name through the allocator (prefetch point, eviction,
// and threads mixing every way to take, checked for real-time order).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "server/base/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "server/core/segment_cursor.h"
#include "storage/memory/memory_store.h"

using namespace seqd;
using namespace std::chrono_literals;

TEST_CASE("SegmentCursor: takes below the limit; the lock holder takes to the end") {
  SegmentCursor c;
  CursorWord w;
  CHECK_FALSE(c.TryTake(w, 1));  // closed until opened
  c.Open(w, 100, 5);             // segment 100..109, the first 5 lock-free
  CHECK(c.TryTake(w, 2) == 100);
  CHECK(c.TryTake(w, 3) == 102);
  CHECK_FALSE(c.TryTake(w, 1));  // at the limit: the claim is given back
  int64_t first = 0;
  CHECK(c.TakeUpTo(w, 3, 10, &first) == 3);
  CHECK(first == 105);
  c.SetLimit(10);
  CHECK(c.TryTake(w, 1) == 108);
  CHECK_FALSE(c.TryTake(w, 2));  // one left
  CHECK(c.TakeUpTo(w, 5, 10, &first) == 1);
  CHECK(first == 109);
  CHECK(c.TakeUpTo(w, 5, 10, &first) == 0);
  CHECK(SegmentCursor::Used(w) == 10);
  CHECK(c.Close(w) == 10);
  CHECK(c.Close(w) == 0);  // already closed
  c.Open(w, 500, 100);
  CHECK(c.TryTake(w, 1) == 500);
  CHECK_FALSE(c.TryTake(w, SegmentCursor::kMaxTake + 1));  // too many at once: the lock's path
  CHECK(c.Close(w) == 1);                                  // the rest are skipped
  CHECK_FALSE(c.TryTake(w, 1));
  c.Open(w, 900, 0);  // open, but not to TryTake
  CHECK_FALSE(c.TryTake(w, 1));
  CHECK(c.TakeUpTo(w, 1, 10, &first) == 1);
  CHECK(first == 900);
}

TEST_CASE("SegmentCursor: a claim that may not be served is skipped only if one came after it") {
  SegmentCursor c;
  CursorWord w;
  c.Open(w, 0, 4);
  CHECK(c.TryTake(w, 3) == 0);
  // A take past the limit while the lock holder claims after it: its claim
  // cannot be given back, so it is skipped; nothing is served twice.
  const uint64_t before = w.v.load();
  w.v.fetch_add(2);  // a racing take's claim of 3..4, not yet given back
  int64_t first = 0;
  CHECK(c.TakeUpTo(w, 1, 10, &first) == 1);
  CHECK(first == 5);
  uint64_t expected = before + 2;  // what that take tries to give back
  CHECK_FALSE(w.v.compare_exchange_strong(expected, before));
  CHECK(SegmentCursor::Used(w) == 6);
}

TEST_CASE("SegmentCursor: Seal makes a failing take's claim final; Used alone does not") {
  SegmentCursor c;
  CursorWord w;
  c.Open(w, 0, 4);
  CHECK(c.TryTake(w, 3) == 0);  // IDs 0..2 handed out
  // Used() alone: a racing take's claim of 3..4 (past the limit) is
  // counted, then given back, and 3 is handed out again: an answer of
  // "4 is the largest" would be wrong.
  uint64_t before = w.v.load();
  w.v.fetch_add(2);
  CHECK(SegmentCursor::Used(w) == 5);
  uint64_t expected = before + 2;
  CHECK(w.v.compare_exchange_strong(expected, before));  // given back
  int64_t first = 0;
  CHECK(c.TakeUpTo(w, 1, 10, &first) == 1);
  CHECK(first == 3);
  // Seal(): the claim it counts cannot be given back (skipped), and the
  // next ID is above its answer.
  before = w.v.load();
  w.v.fetch_add(2);  // a racing take's claim of 4..5
  CHECK(c.Seal(w) == 6);
  expected = before + 2;
  CHECK_FALSE(w.v.compare_exchange_strong(expected, before));
  CHECK(c.TakeUpTo(w, 1, 10, &first) == 1);
  CHECK(first == 6);
  // With no take in flight nothing is skipped, and lock-free takes go on
  // below the limit after a seal.
  c.SetLimit(9);
  CHECK(c.Seal(w) == 7);
  CHECK(c.TryTake(w, 1) == 7);
  CHECK(c.Seal(w) == 8);
  CHECK(c.TryTake(w, 1) == 8);
  CHECK(c.Base() == 0);
}

TEST_CASE("SegmentCursor: no ID at or below a seal's answer is handed out after it") {
  // A taker failing at the limit in a loop (each failure a claim that is
  // given back) against the lock holder sealing and then taking one ID,
  // for 300 ms: the ID must lie above the seal's answer every time.
  constexpr int64_t kSize = int64_t{1} << 16;
  SegmentCursor c;
  CursorWord w;
  int64_t base = 0, first = 0;
  auto open = [&] {  // then past the limit: lock-free takes fail from here
    c.Open(w, base, 8);
    REQUIRE(c.TakeUpTo(w, 8, kSize, &first) == 8);
  };
  open();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> tries{0};
  // Right after a reopen a take may be served below the limit, before the
  // holder claims past it: legitimate, and below the holder's next IDs.
  std::thread taker([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      (void)c.TryTake(w, 4);
      tries.fetch_add(1, std::memory_order_relaxed);
    }
  });
  int64_t bad = 0, rounds = 0;
  std::atomic<int64_t> pause{0};
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i, ++rounds) {
      const int64_t sealed = base + c.Seal(w);
      // In a server the next take comes long after the answer: a claim
      // counted in it has been given back by then.
      for (int k = 0; k < 64; ++k) pause.fetch_add(1, std::memory_order_relaxed);
      if (c.TakeUpTo(w, 1, kSize, &first) != 1) {
        c.Close(w);
        base += kSize;
        open();
      } else if (first < sealed) {
        ++bad;
      }
    }
  }
  stop = true;
  taker.join();
  CHECK(tries > 1000);  // the taker ran (each try a claim given back)
  CHECK(rounds > 1000);
  // With Used() in place of Seal() this fails.
  CHECK(bad == 0);
}

TEST_CASE("SegmentCursor: readers racing a writer that replaces segments get each ID once") {
  // The writer replaces the segment as soon as it is used up, sometimes
  // after taking some of it itself, sometimes closing it early. Readers
  // must never get an ID twice, an ID outside the segment it came from, or
  // an ID below one they got before (segments only grow).
  constexpr int kReaders = 3;
  constexpr int64_t kSegment = 64;
  constexpr int kSegments = 20000;
  SegmentCursor cursor;
  CursorWord word;
  std::mutex mu;  // the owner's lock
  std::atomic<bool> stop{false};
  std::vector<std::vector<int64_t>> got(kReaders);
  std::vector<int64_t> by_writer;
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      for (int64_t attempt = 0; !stop.load(); ++attempt) {
        const int64_t n = 1 + attempt % 3;
        if (std::optional<int64_t> first = cursor.TryTake(word, n)) {
          for (int64_t id = *first; id < *first + n; ++id) got[r].push_back(id);
        } else {
          // Nothing to take: let the writer run, as a real caller would park
          // (three readers spinning on the word starve it on two cores).
          std::this_thread::yield();
        }
      }
    });
  }
  for (int s = 0; s < kSegments; ++s) {
    std::lock_guard lock(mu);
    const int64_t base = 1000 + s * kSegment * 2;  // gaps between segments
    cursor.Close(word);
    cursor.Open(word, base, s % 2 ? kSegment : kSegment / 2);
    if (s % 3 == 0) {
      int64_t first = 0;
      const int64_t n = cursor.TakeUpTo(word, 7, kSegment, &first);
      for (int64_t id = first; id < first + n; ++id) by_writer.push_back(id);
    }
    if (s % 5 == 0) continue;  // closed early by the next round, readers still taking
    // The readers use the segment up, or, when they have not within
    // kPatience (a loaded machine, ThreadSanitizer), the next round closes it
    // early as it does every fifth one: the same races, in bounded time.
    constexpr auto kPatience = std::chrono::microseconds(200);
    const auto give_up = std::chrono::steady_clock::now() + kPatience;
    while (SegmentCursor::Used(word) < (s % 2 ? kSegment : kSegment / 2) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  }
  stop = true;
  for (auto& t : readers) t.join();
  std::set<int64_t> all(by_writer.begin(), by_writer.end());
  size_t total = by_writer.size();
  for (const auto& ids : got) {
    for (size_t i = 1; i < ids.size(); ++i) REQUIRE(ids[i] > ids[i - 1]);
    for (int64_t id : ids) {
      const int64_t offset = (id - 1000) % (kSegment * 2);
      REQUIRE(id >= 1000);
      REQUIRE(offset < kSegment);  // inside a segment, never in a gap
    }
    all.insert(ids.begin(), ids.end());
    total += ids.size();
  }
  CHECK(all.size() == total);  // no ID twice
  CHECK(total > static_cast<size_t>(kSegments));
}

namespace {

struct Fixture {
  MemoryStore store;
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<SegmentAllocator> alloc;

  explicit Fixture(AllocatorOptions o = {}) {
    alloc = std::make_unique<SegmentAllocator>(store, db, clock, KeyRules(), o);
  }
  std::optional<IdBatch> TakeNow(KeyHandle& h, int64_t count = 1) {
    std::optional<IdBatch> out;
    alloc->Take(h, count, [&](Result<IdBatch> r) {
      if (r) out = *r;
    });
    db.RunAll();
    return out;
  }
};

}  // namespace

TEST_CASE("KeyHandle: from memory up to the prefetch point, then the next segment is reserved") {
  AllocatorOptions o;
  o.prefetch_fraction = 0.5;
  Fixture f(o);
  REQUIRE(f.store.CreateKey("k", 10, ""));
  KeyHandle h = f.alloc->Handle("k");
  CHECK(h.key() == "k");
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // not in memory yet
  std::optional<IdBatch> first = f.TakeNow(h);
  REQUIRE(first);
  CHECK(first->ranges[0].first == 1);
  // That take waited for the segment: the next one goes through the lock,
  // where the key's rate is measured from (its client's turnaround is not
  // the key's rate), and opens the way for lock-free takes.
  CHECK_FALSE(f.alloc->TryTake(h, 1));
  CHECK(f.TakeNow(h)->ranges[0].first == 2);
  for (int64_t id = 3; id <= 5; ++id) CHECK(f.alloc->TryTake(h, 1) == id);
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // the prefetch point: the next takes reserve
  CHECK(f.db.pending() == 0);
  bool answered = false;
  f.alloc->Take(h, 1, [&](Result<IdBatch> r) { answered = r && r->ranges[0].first == 6; });
  CHECK(answered);                      // served from the current segment...
  CHECK(f.db.pending() == 1);           // ...and the next one is on its way
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // still through the lock until it lands
  f.db.RunAll();
  for (int64_t id = 7; id <= 10; ++id) CHECK(f.alloc->TryTake(h, 1) == id);  // to the end
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // the next segment is installed by the lock holder
  CHECK(f.TakeNow(h)->ranges[0].first == 11);
  CHECK_FALSE(f.alloc->TryTake(h, 0));
  CHECK_FALSE(f.alloc->TryTake(h, o.max_count + 1));
}

TEST_CASE("KeyHandle: an evicted key is loaded again; its old IDs are never served") {
  AllocatorOptions o;
  o.idle_timeout = 10min;
  Fixture f(o);
  REQUIRE(f.store.CreateKey("k", 100, ""));
  KeyHandle h = f.alloc->Handle("k");
  REQUIRE(f.TakeNow(h));
  REQUIRE(f.TakeNow(h)->ranges[0].first == 2);  // after a wait, one take through the lock
  // Sweeps every idle_timeout / 4, as the server runs them. A take without
  // the lock is seen by the next sweep, which counts it as made at the
  // sweep before.
  auto sweep = [&](Clock::Duration after) {
    f.clock.Advance(after);
    return f.alloc->EvictIdle();
  };
  CHECK(sweep(150s) == 0);  // 2.5 min
  CHECK(sweep(150s) == 0);  // 5
  CHECK(sweep(150s) == 0);  // 7.5
  f.clock.Advance(90s);
  REQUIRE(f.alloc->TryTake(h, 1) == 3);  // at 9 min
  CHECK(sweep(60s) == 0);                // 10: ten minutes after the first take, but used since
  CHECK(sweep(150s) == 0);               // 12.5
  CHECK(sweep(150s) == 0);               // 15
  CHECK(sweep(150s) == 1);               // 17.5: ten minutes after the sweep before the use
  REQUIRE(f.alloc->stats().keys_in_memory == 0);
  CHECK_FALSE(f.alloc->TryTake(h, 1));  // 4..100 are never served
  std::optional<IdBatch> again = f.TakeNow(h);
  REQUIRE(again);
  CHECK(again->ranges[0].first == 101);  // a fresh segment
  CHECK(f.TakeNow(h)->ranges[0].first == 102);
  CHECK(f.alloc->TryTake(h, 1) == 103);  // the handle follows the key back into memory
}

TEST_CASE("KeyHandle: snapshots see the IDs taken without the lock") {
  Fixture f;
  REQUIRE(f.store.CreateKey("k", 1000, ""));
  KeyHandle h = f.alloc->Handle("k");
  REQUIRE(f.TakeNow(h));
  REQUIRE(f.TakeNow(h));  // after a wait, one take through the lock
  for (int i = 0; i < 20; ++i) REQUIRE(f.alloc->TryTake(h, 1));
  std::optional<KeySnapshot> snap = f.alloc->SnapshotKey("k");
  REQUIRE(snap);
  CHECK(snap->current.next == 23);
}

TEST_CASE("many threads by handle, by name and through the lock: real-time order per key") {
  // Small segments, a one-thread database runner and an eviction sweep
  // racing the takers: every way to take, and every transition between the
  // lock-free path and the lock, happens often. Each take is stamped with
  // a global counter before it starts and after it ends; a take that ended
  // before another started must have smaller IDs.
  MemoryStore store;
  REQUIRE(store.CreateKey("k", 200, ""));
  ThreadPoolRunner db(1);
  ManualClock clock;
  AllocatorOptions o;
  o.idle_timeout = 1ms;  // every sweep evicts an idle key
  o.max_step = 400;
  // The sweeper moves the manual clock 1 ms a turn, however slow the
  // database thread is on a loaded machine: no parked take may time out.
  o.wait_deadline = std::chrono::hours(24);
  SegmentAllocator alloc(store, db, clock, KeyRules(), o);
  StopRunnerOnExit stop_db(db);
  struct Op {
    int64_t start = 0, end = 0, first = 0, last = 0;
    std::vector<IdRange> ranges;  // one, or two if it spans segments
  };
  std::atomic<int64_t> now{0};
  constexpr int kThreads = 3, kPerThread = 20000;
  std::vector<std::vector<Op>> ops(kThreads);
  std::atomic<bool> stop{false};
  std::thread sweeper([&] {
    while (!stop) {
      clock.Advance(1ms);
      alloc.EvictIdle();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      KeyHandle h = alloc.Handle("k");
      std::mutex mu;
      std::condition_variable cv;
      for (int i = 0; i < kPerThread; ++i) {
        const int64_t count = 1 + i % 3;
        Op op;
        op.start = now.fetch_add(1);
        if (std::optional<int64_t> first = i % 2 ? alloc.TryTake(h, count) : std::nullopt) {
          op.first = *first;
          op.last = *first + count - 1;
          op.ranges = {IdRange{op.first, op.last}};
        } else {
          bool done = false;
          auto cb = [&](Result<IdBatch> r) {
            if (!r) FAIL_CHECK(r.error().message);
            REQUIRE(r.ok());
            std::lock_guard lock(mu);
            op.first = r->ranges.front().first;
            op.last = r->ranges.back().last;
            op.ranges.assign(r->ranges.begin(), r->ranges.end());
            done = true;
            cv.notify_one();
          };
          if (i % 4 == 0) {
            alloc.Take("k", count, cb);
          } else {
            alloc.Take(h, count, cb);
          }
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return done; });
        }
        op.end = now.fetch_add(1);
        ops[t].push_back(op);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  sweeper.join();
  std::vector<Op> all;
  for (const auto& v : ops) all.insert(all.end(), v.begin(), v.end());
  // Unique IDs; at most two ranges per take (the end of one segment and the
  // start of the next), each increasing.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const Op& op : all) {
    REQUIRE(op.ranges.size() <= 2);
    for (const IdRange& r : op.ranges) ranges.emplace_back(r.first, r.last);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) REQUIRE(ranges[i].first > ranges[i - 1].second);
  // Real-time order: the largest ID of every op that ended before `b`
  // started is below b's first.
  std::vector<Op> by_end = all;
  std::sort(by_end.begin(), by_end.end(), [](const Op& a, const Op& b) { return a.end < b.end; });
  std::vector<int64_t> max_last(by_end.size());
  for (size_t i = 0; i < by_end.size(); ++i) {
    max_last[i] = std::max(i ? max_last[i - 1] : 0, by_end[i].last);
  }
  int violations = 0;
  for (const Op& b : all) {
    auto it = std::lower_bound(by_end.begin(), by_end.end(), b.start,
                               [](const Op& a, int64_t start) { return a.end < start; });
    if (it == by_end.begin()) continue;
    if (max_last[static_cast<size_t>(it - by_end.begin()) - 1] >= b.first) ++violations;
  }
  CHECK(violations == 0);
  CHECK(alloc.stats().evicted_idle > 0);  // the sweeper really raced the takers
}
