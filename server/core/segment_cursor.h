// The current segment of one key as every thread takes from it without a
// lock. Two parts, kept on different cache lines by the key's layout:
//   - the word (a CursorWord: generation:24 | offset:40), the only thing a
//     take writes: every claim is one fetch_add on it;
//   - the SegmentCursor itself, read-mostly: the segment's base and a tag
//     (generation:24 | limit:40), written only by the holder of the key's
//     lock and read as a seqlock.
// A take below the limit is one fetch_add and four loads (the tag, then the
// tag, the base and the tag again) of a line no take writes, so two threads
// taking from one key pass one cache line between them per take. Everything else (taking up to the
// segment's real end, replacing the segment) is done by the holder of the key's lock.
//
// Why it is safe:
//   - Every ID is claimed on the word, by takes and by the lock holder
//     alike (TakeUpTo), so no two claims overlap whatever the limit says.
//     The limit only decides which claims a take may serve; a claim it may
//     not serve is given back if nothing was claimed after it, else skipped
//     (a hole, as after a restart; at most one per racing take).
//   - The generation ties a claim to the segment it was made on. Open()
//     writes the tag's generation with limit 0, then the base, then the
//     real limit, then publishes the word at the new generation and offset
//     0. A take serves only if the tag it read before and after the base
//     is the same, has its word's generation and a limit its claim fits
//     under, so a base from another segment is never used (it would take
//     2^24 segments or seals (MAX_IDS answers) during one take to come
//     back to a generation).
//
// Thread safety: TryTake() and Used() from any thread, without a lock. The
// other methods REQUIRE the owner's lock: one writer at a time. Every call
// on a cursor passes the same word.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

namespace seqd {

// The word every take writes; give it a cache line without fields that
// takes read (see KeyState in key_state.h). Starts closed.
struct CursorWord {
  std::atomic<uint64_t> v{kClosedOffset};
  // An offset no limit reaches, far enough from the mask that takes racing
  // a close never carry into the generation.
  static constexpr uint64_t kClosedOffset = ((uint64_t{1} << 40) - 1) - (uint64_t{1} << 38);
};

class SegmentCursor {
 public:
  // Segments and limits must stay below this many IDs.
  static constexpr int64_t kMaxSize = int64_t{1} << 39;
  // TryTake claims at most this many at once: takes racing a Close() then
  // add far less to the closed offset than it has room for (2^38).
  static constexpr int64_t kMaxTake = int64_t{1} << 24;

  // Claims `count` IDs (1 <= count) if they fit below the limit; returns the
  // first. nullopt: closed, past the limit, more than kMaxTake, or the
  // segment was being replaced (then the lock holder's path serves).
  // Always inlined: the allocator's hot path.
  [[gnu::always_inline]] std::optional<int64_t> TryTake(CursorWord& word, int64_t count) {
    // Closed, or lock-free takes are off: leave the word alone.
    if (count > kMaxTake || Limit(tag_.load(std::memory_order_relaxed)) == 0) return std::nullopt;
    const uint64_t old = word.v.fetch_add(static_cast<uint64_t>(count), std::memory_order_acq_rel);
    const uint64_t before = tag_.load(std::memory_order_acquire);
    const int64_t base = base_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t after = tag_.load(std::memory_order_relaxed);
    const int64_t offset = Offset(old);
    if (before == after && Generation(before) == Generation(old) &&
        offset + count <= Limit(before)) {
      return base + offset;
    }
    // Not ours to serve: give the IDs back unless something was claimed
    // after them (then they are skipped).
    uint64_t claimed = old + static_cast<uint64_t>(count);
    word.v.compare_exchange_strong(claimed, old, std::memory_order_relaxed);
    return std::nullopt;
  }

  // Lock held; open. The segment's first ID.
  int64_t Base() const { return base_.load(std::memory_order_relaxed); }

  // IDs claimed from the open segment so far; may run past its size by
  // takes that failed at its end (cap it). REQUIRES: open.
  static int64_t Used(const CursorWord& word) {
    return Offset(word.v.load(std::memory_order_acquire));
  }

  // Lock held; open. IDs claimed from the open segment so far, made final:
  // a take whose claim is in the answer and that fails gives nothing back
  // (its IDs are skipped), so every ID below Base() + the answer was handed
  // out or never will be, and every later claim is above it. Used() alone
  // may count a failing take's claim that is given back and handed out
  // again. Moves the segment to a new generation at the same base, offset
  // and limit: a take racing it fails (its IDs skipped) and goes the lock
  // holder's way; with no take in flight nothing is skipped. May run past
  // the segment's size (cap it).
  int64_t Seal(CursorWord& word) {
    const uint64_t tag = tag_.load(std::memory_order_relaxed);
    const uint64_t generation = (Generation(tag) + 1) & kGenerationMask;
    // As Open: a take that reads the new tag around the old word (or the
    // reverse) sees the generations differ.
    tag_.store(Tag(generation, 0), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    tag_.store(Tag(generation, Limit(tag)), std::memory_order_release);
    uint64_t w = word.v.load(std::memory_order_acquire);
    while (!word.v.compare_exchange_weak(w, (generation << kOffsetBits) | (w & kOffsetMask),
                                         std::memory_order_acq_rel, std::memory_order_acquire)) {
    }
    return Offset(w);
  }

  // Lock held; open. Claims up to `n` IDs below `size` (the segment's real
  // size, at least the limit); returns how many, and the first in `*first`.
  int64_t TakeUpTo(CursorWord& word, int64_t n, int64_t size, int64_t* first) {
    uint64_t w = word.v.load(std::memory_order_acquire);
    for (;;) {
      const int64_t offset = Offset(w);
      const int64_t k = std::min(n, size - offset);
      if (k <= 0) return 0;
      if (word.v.compare_exchange_weak(w, w + static_cast<uint64_t>(k), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        *first = base_.load(std::memory_order_relaxed) + offset;
        return k;
      }
    }
  }

  // Lock held; open. Claims exactly `n` IDs below `size` if that many are
  // left (one contiguous block), returning true and the first in `*first`;
  // else claims nothing and returns false.
  bool TakeExactly(CursorWord& word, int64_t n, int64_t size, int64_t* first) {
    uint64_t w = word.v.load(std::memory_order_acquire);
    for (;;) {
      const int64_t offset = Offset(w);
      if (size - offset < n) return false;
      if (word.v.compare_exchange_weak(w, w + static_cast<uint64_t>(n), std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        *first = base_.load(std::memory_order_relaxed) + offset;
        return true;
      }
    }
  }

  // Lock held. Ends the open segment (no take succeeds until Open); returns
  // how many of its IDs were claimed (cap it at the segment's size). A
  // closed cursor returns 0.
  int64_t Close(CursorWord& word) {
    const uint64_t generation = Generation(tag_.load(std::memory_order_relaxed));
    tag_.store(Tag(generation, 0), std::memory_order_release);
    const uint64_t was = word.v.exchange((generation << kOffsetBits) | CursorWord::kClosedOffset,
                                         std::memory_order_acq_rel);
    return Offset(was) >= static_cast<int64_t>(CursorWord::kClosedOffset) ? 0 : Offset(was);
  }

  // Lock held; closed. Serves IDs from `base` on, the first `limit`
  // (<= kMaxSize; 0: none until SetLimit) of them to TryTake.
  void Open(CursorWord& word, int64_t base, int64_t limit) {
    const uint64_t generation =
        (Generation(tag_.load(std::memory_order_relaxed)) + 1) & kGenerationMask;
    // A take that reads a tag of the new generation around a base of the
    // old one (or the reverse) sees the tags differ.
    tag_.store(Tag(generation, 0), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    base_.store(base, std::memory_order_relaxed);
    tag_.store(Tag(generation, limit), std::memory_order_release);
    word.v.store(generation << kOffsetBits, std::memory_order_release);
  }

  // Lock held; open. TryTake may now serve claims below `limit` (higher or
  // lower than before: every claim is on the word, so any limit is safe).
  void SetLimit(int64_t limit) {
    const uint64_t generation = Generation(tag_.load(std::memory_order_relaxed));
    tag_.store(Tag(generation, limit), std::memory_order_release);
  }

 private:
  static constexpr int kOffsetBits = 40;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;
  static constexpr uint64_t kGenerationMask = (uint64_t{1} << (64 - kOffsetBits)) - 1;
  static int64_t Offset(uint64_t word) { return static_cast<int64_t>(word & kOffsetMask); }
  static uint64_t Generation(uint64_t word_or_tag) { return word_or_tag >> kOffsetBits; }
  static int64_t Limit(uint64_t tag) { return static_cast<int64_t>(tag & kOffsetMask); }
  static uint64_t Tag(uint64_t generation, int64_t limit) {
    return (generation << kOffsetBits) | static_cast<uint64_t>(limit);
  }

  std::atomic<int64_t> base_{0};
  std::atomic<uint64_t> tag_{0};  // generation 0, limit 0: closed
};

}  // namespace seqd
