// One key held in memory by the SegmentAllocator (segment_allocator.h): its
// two segment buffers, the reservation in flight, the requests parked on
// it and its dynamic step. Private to the allocator; in a header of its own
// so that the allocator's declarations can say which key's lock they need
// (REQUIRES(state.mu)) and the compiler checks it.
//
// Thread safety: every field a GUARDED_BY names is read and written only
// with the key's `mu` held. Without it: `key` (constant), the atomics
// (`last_used`, `cursor_word`, and KeyFastPath's cursor, epoch, erased and
// refs, which the fast path reads and only the holder of `mu` writes), and
// AutoCreatedUnlocked() (see there). Lock order: the shard's mutex
// (key_shard.h) before a key's, never the reverse.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/base/tiny_mutex.h"
#include "server/core/key_handle.h"
#include "server/core/key_name.h"
#include "server/core/latency_byte.h"
#include "server/core/segment_cursor.h"
#include "server/service/id_api.h"

namespace seqd::allocator_internal {

// One reserved segment: [first, last]; its step is its size.
struct Buffer {
  int64_t first = 0;
  int64_t last = 0;
  int64_t size() const { return last - first + 1; }
};

// A request parked until a reservation lands. Belongs to its key's parked
// list (read and written with the key's mutex held) until taken out of it,
// then to whoever took it out.
struct Waiter {
  uint64_t id = 0;   // unique in its allocator: how its deadline finds it
  int64_t need = 0;  // IDs still missing
  // NEXT_BLOCK: all `need` IDs from one segment at once (got stays empty
  // until then); else served from as many segments as it takes.
  bool contiguous = false;
  IdBatch got;
  TakeCallback done;
};

// What a key holds only while requests wait on it, before its first
// reservation, after a failure, or with a row step of 2^31 or more: most
// keys in memory have none. Guarded by its key's mutex (KeyState::wait).
struct WaitState {
  // Vectors, not deques: an empty deque costs ~600 bytes of heap.
  std::vector<std::shared_ptr<Waiter>> parked;
  std::optional<std::string> last_error;  // of the latest failed reservation
  std::string creator;          // auto-created keys, until the first reservation: who asked first
  Clock::TimePoint retry_at{};  // no reservation before this (after a failure)
  bool retry_scheduled = false;
  // The row's step when it is 2^31 or more (KeyState::table_step32); else 0.
  int64_t table_step = 0;
};

// One key in memory. Kept small (a million keys are held at once): the
// rare parts live in WaitState; the metric label and counter
// (IssuedCounters), the shard and the rule's step are worked out from the
// key when needed.
//
// The fast path (KeyFastPath: the current segment's cursor, the epoch, the
// erased flag) is read without mu; it is written only with mu held.
// Lifetime: reference-counted (KeyRef); the shard's table holds one.
struct KeyState : KeyFastPath {
  explicit KeyState(std::string_view k) : key(k) {}

  // Declared first: the compiler places these three bytes in KeyFastPath's
  // tail padding (key_handle.h), not in a word of their own.
  //
  // Set before the key's first reservation is queued and never changed, so
  // read without mu too (AutoCreatedUnlocked): a byte of its own, not a
  // bit-field.
  bool auto_created GUARDED_BY(mu) = false;
  // Flags in one byte (a million keys are held at once).
  // The current segment: cursor.Base() .. current_last.
  bool has_current : 1 GUARDED_BY(mu) = false;
  bool has_next : 1 GUARDED_BY(mu) = false;
  bool loading : 1 GUARDED_BY(mu) = false;  // a reservation is queued or in flight
  // A landing just answered waiting requests: the rate window starts at
  // the next take, which goes through the lock (lock-free takes are off
  // until then). How long those clients took to ask again is not the
  // key's rate.
  bool window_at_next_take : 1 GUARDED_BY(mu) = false;
  // MAX_IDS: a segment was installed at the key's epoch, so `last_issued`
  // and the current segment say the largest ID handed out (MaxLocked).
  bool max_known : 1 GUARDED_BY(mu) = false;
  // How long reservations take lately, from sending to landing: a decaying
  // maximum (LatencyByte), which sizes the next step. In the last byte of
  // KeyFastPath's padding.
  uint8_t reserve_latency GUARDED_BY(mu) = 0;

  const KeyName key;  // 16 bytes; up to 15 of them inline
  // Whole seconds since the allocator started, as of the coarse clock (the
  // latest sweep or reservation): stamped by lookups by name, and when IDs
  // taken without the lock are first counted.
  mutable std::atomic<uint32_t> last_used{0};
  mutable TinyMutex mu;
  // Reservations landed. With no auto-create rule for the key, 0 also says
  // the store has not confirmed the key yet (no metric series of its own).
  int32_t reservations GUARDED_BY(mu) = 0;
  // The dynamic step; 0 until the first reservation. Through StepLocked and
  // SetStepLocked: 32 bits, as max_step is below 2^31 (AllocatorOptions),
  // so only a row's own step (table_step, from SQL) of 2^31 or more goes
  // past it, and then the step is that row's step (never above
  // max(max_step, table_step)): stored as kStepPastInt32.
  int32_t step32 GUARDED_BY(mu) = 0;
  // The row's step, 0 until the first reservation tells us. Through
  // TableStepLocked and SetTableStepLocked: kStepPastInt32 says it is
  // 2^31 or more (only a SQLite row set by SQL can be), kept in the wait
  // state.
  int32_t table_step32 GUARDED_BY(mu) = 0;
  // IssuedLocked() modulo 2^32 when the latest reservation landed, before
  // the requests parked on it were served (last_reserved_at says when):
  // the rate that sizes the next step. The difference to IssuedLocked()
  // modulo 2^32 is exact: a key issues under 2^32 IDs between two landings
  // (two segments of under 2^31), unless a row's step is 2^31 or more, and
  // then the step is the row's whatever the rate.
  uint32_t issued_at_landing GUARDED_BY(mu) = 0;
  // IssuedLocked() modulo 2^32 when the counters (metrics) were last told
  // (ReportIssuedLocked). Exact as a difference: every take through the
  // lock and every landing reports, so between two reports only lock-free
  // takes from one segment issue IDs, and a segment serves fewer than 2^32
  // (kMaxServedSegment). Mutable: brought up to date by snapshots too.
  mutable uint32_t reported GUARDED_BY(mu) = 0;
  // Two samples of (when, IDs issued) for the recent rate: [0] at least
  // kRateSpacing older than [1]. When: milliseconds since the allocator
  // started, modulo 2^32, and so are their differences (samples are never
  // 49 days apart: the idle sweep samples every key it keeps). IDs issued:
  // at [1] exactly, and from [0] to [1] as a float (a rate shown, 24 bits
  // of precision), so the pair takes 20 bytes, not 32.
  mutable uint32_t rate_at_ms[2] GUARDED_BY(mu) = {0, 0};
  mutable float rate_issued_between GUARDED_BY(mu) = 0;
  // When the latest reservation landed (exact: a cold key's first segment
  // may last a millisecond, and its rate sizes the next).
  Clock::TimePoint last_reserved_at GUARDED_BY(mu) = {};
  int64_t current_last GUARDED_BY(mu) = 0;
  Buffer next GUARDED_BY(mu);
  // The cursor's word (see KeyFastPath): what the fast path writes. Placed
  // here, more than a cache line past the fields takes read, so two threads
  // taking from one key do not drag those to and fro with it.
  CursorWord cursor_word;
  // IDs taken from segments no longer current; IssuedLocked() adds the
  // current one's.
  int64_t issued_closed GUARDED_BY(mu) = 0;
  // The largest ID below the current segment that was handed out or will
  // never be (segments ended, the IDs skipped below an installed one).
  int64_t last_issued GUARDED_BY(mu) = 0;
  mutable int64_t rate_issued GUARDED_BY(mu) = 0;  // at rate_at_ms[1]
  // See WaitState; null: none.
  std::unique_ptr<WaitState> wait GUARDED_BY(mu) PT_GUARDED_BY(mu);

  // `auto_created` without mu. Safe: it is written (with mu held) before
  // the key's first reservation is queued and never again, and every reader
  // without mu got the key from that reservation or later.
  bool AutoCreatedUnlocked() const NO_THREAD_SAFETY_ANALYSIS { return auto_created; }

  static constexpr int32_t kStepPastInt32 = std::numeric_limits<int32_t>::max();
  // A segment serves at most this many IDs; the rest of a larger one are
  // skipped, as after a restart. Only a row's step of 2^32 or more (set by
  // SQL on SQLite) comes near it. Below SegmentCursor::kMaxSize.
  static constexpr int64_t kMaxServedSegment = (int64_t{1} << 32) - 1;
  int64_t StepLocked() const REQUIRES(mu) {
    return step32 == kStepPastInt32 ? std::max<int64_t>(step32, TableStepLocked()) : step32;
  }
  void SetStepLocked(int64_t step) REQUIRES(mu) {
    step32 = static_cast<int32_t>(std::min<int64_t>(step, kStepPastInt32));
  }

  int64_t TableStepLocked() const REQUIRES(mu) {
    return table_step32 == kStepPastInt32 && wait ? wait->table_step : table_step32;
  }
  void SetTableStepLocked(int64_t step) REQUIRES(mu) {
    if (step >= kStepPastInt32) {
      table_step32 = kStepPastInt32;
      WaitLocked().table_step = step;
    } else {
      table_step32 = static_cast<int32_t>(step);
      if (wait) wait->table_step = 0;
    }
  }

  Buffer CurrentLocked() const REQUIRES(mu) { return Buffer{cursor.Base(), current_last}; }
  // IDs of the current segment claimed so far (takes that failed at its end
  // may have run the word past it).
  int64_t UsedLocked() const REQUIRES(mu) {
    return has_current ? std::min(SegmentCursor::Used(cursor_word), CurrentLocked().size()) : 0;
  }
  int64_t CurrentLeftLocked() const REQUIRES(mu) {
    return has_current ? CurrentLocked().size() - UsedLocked() : 0;
  }
  int64_t IssuedLocked() const REQUIRES(mu) { return issued_closed + UsedLocked(); }
  // Ends the current segment; its unclaimed IDs are skipped.
  void DropCurrentLocked() REQUIRES(mu) {
    if (!has_current) return;
    const int64_t used = std::min(cursor.Close(cursor_word), CurrentLocked().size());
    issued_closed += used;
    if (used > 0) last_issued = std::max(last_issued, cursor.Base() + used - 1);
    has_current = false;
  }
  // REQUIRES: max_known. The largest ID handed out (or never to be): in
  // the current segment if any of it was claimed, else last_issued. Seals
  // the current segment's claims (SegmentCursor::Seal): no ID at or below
  // the answer is handed out later.
  int64_t MaxLocked() REQUIRES(mu) {
    const int64_t used =
        has_current ? std::min(cursor.Seal(cursor_word), CurrentLocked().size()) : 0;
    return used > 0 ? std::max(last_issued, cursor.Base() + used - 1) : last_issued;
  }
  bool HasParkedLocked() const REQUIRES(mu) { return wait && !wait->parked.empty(); }
  size_t ParkedLocked() const REQUIRES(mu) { return wait ? wait->parked.size() : 0; }
  // Removes and returns every parked request.
  std::vector<std::shared_ptr<Waiter>> TakeParkedLocked() REQUIRES(mu) {
    std::vector<std::shared_ptr<Waiter>> out;
    if (wait) out.swap(wait->parked);
    return out;
  }
  WaitState& WaitLocked() REQUIRES(mu) {
    if (!wait) wait = std::make_unique<WaitState>();
    return *wait;
  }
  // Frees the wait state once nothing in it matters any more.
  void TidyLocked() REQUIRES(mu) {
    if (wait && wait->parked.empty() && !wait->last_error && !wait->retry_scheduled &&
        wait->creator.empty() && wait->table_step == 0) {
      wait.reset();
    }
  }
};

using KeyRef = boost::intrusive_ptr<KeyState>;

}  // namespace seqd::allocator_internal
