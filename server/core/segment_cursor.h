// The current segment of one key as every thread takes from it without a
// lock: one packed atomic word (generation:24 | offset:40) over the
// segment's base and a limit. A take below the limit is one compare-and-swap;
// everything else (taking up to the segment's real end, replacing the
// segment) is done by the holder of the key's lock.
//
// Why a generation: a reader loads the word, then base and limit, then
// swaps the word. A segment is replaced in three steps: Close() moves the
// offset past any limit, Open() writes the new base and limit and then
// publishes the next generation at offset 0. A reader whose base or limit
// came from a later segment than its word sees its swap fail, because the
// word has changed since (the generation only grows; it would take 2^24
// replacements during one take to come back).
//
// Thread safety: TryTake() and Used() from any thread, without a lock. The
// other methods REQUIRE the owner's lock: one writer at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

namespace seqd {

class SegmentCursor {
 public:
  // Segments and limits must stay below this many IDs.
  static constexpr int64_t kMaxSize = int64_t{1} << 39;

  // Claims `count` IDs (1 <= count <= kMaxSize) if they fit below the
  // limit; returns the first. nullopt: closed, or past the limit.
  std::optional<int64_t> TryTake(int64_t count) {
    uint64_t word = word_.load(std::memory_order_acquire);
    for (;;) {
      const int64_t offset = Offset(word);
      const int64_t base = base_.load(std::memory_order_acquire);
      const int64_t limit = limit_.load(std::memory_order_acquire);
      if (offset + count > limit) return std::nullopt;
      if (word_.compare_exchange_weak(word, word + static_cast<uint64_t>(count),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
        return base + offset;
      }
    }
  }

  // Lock held; open. The segment's first ID.
  int64_t Base() const { return base_.load(std::memory_order_relaxed); }

  // IDs claimed from the open segment so far. REQUIRES: open.
  int64_t Used() const { return Offset(word_.load(std::memory_order_acquire)); }

  // Lock held; open. Claims up to `n` IDs below `size` (the segment's real
  // size, at least the limit); returns how many, and the first in `*first`.
  int64_t TakeUpTo(int64_t n, int64_t size, int64_t* first) {
    uint64_t word = word_.load(std::memory_order_acquire);
    for (;;) {
      const int64_t offset = Offset(word);
      const int64_t k = std::min(n, size - offset);
      if (k <= 0) return 0;
      if (word_.compare_exchange_weak(word, word + static_cast<uint64_t>(k),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
        *first = base_.load(std::memory_order_relaxed) + offset;
        return k;
      }
    }
  }

  // Lock held. Ends the open segment (no take succeeds until Open); returns
  // how many of its IDs were claimed. A closed cursor returns 0.
  int64_t Close() {
    const uint64_t word = word_.load(std::memory_order_relaxed);
    const uint64_t was = word_.exchange((word & ~kOffsetMask) | kClosed, std::memory_order_acq_rel);
    return Offset(was) == static_cast<int64_t>(kClosed) ? 0 : Offset(was);
  }

  // Lock held; closed. Serves IDs from `base` on, the first `limit`
  // (<= kMaxSize) of them to TryTake.
  void Open(int64_t base, int64_t limit) {
    base_.store(base, std::memory_order_release);
    limit_.store(limit, std::memory_order_release);
    const uint64_t generation = (word_.load(std::memory_order_relaxed) >> kOffsetBits) + 1;
    word_.store(generation << kOffsetBits, std::memory_order_release);
  }

  // Lock held; open. TryTake may now claim up to `limit` IDs of the segment.
  void SetLimit(int64_t limit) { limit_.store(limit, std::memory_order_release); }

 private:
  static constexpr int kOffsetBits = 40;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;
  // An offset no limit reaches, far enough from the mask that concurrent
  // failed takes never carry into the generation (a failed take writes
  // nothing anyway).
  static constexpr uint64_t kClosed = kOffsetMask - (uint64_t{1} << 38);
  static int64_t Offset(uint64_t word) { return static_cast<int64_t>(word & kOffsetMask); }

  std::atomic<uint64_t> word_{kClosed};
  std::atomic<int64_t> base_{0};
  std::atomic<int64_t> limit_{0};
};

}  // namespace seqd
