// The deadlines of parked requests (SegmentAllocator::wait_deadline), kept
// with a handful of timers instead of one timer per request.
//
// Every request parks for the same duration, so each lane's deadlines come
// in the order they were added: a lane is a FIFO with one Clock::RunAt armed
// for its head (at most kBatch late, so that one firing serves many). A
// request served before its deadline stays queued until then (its key and
// id: 24 bytes; the request itself is freed once answered); Expire finds it
// already answered and does nothing.
//
// Thread safety: Add() is safe from any thread (callers spread over lanes by
// thread, so network threads rarely meet on a lock). `expire` runs on the
// clock's timer threads, outside every lane lock, once per added entry whose
// deadline passed.
// Lifetime: the clock's pending timers call into this object; they must have
// run or been dropped (io stopped) before it is destroyed.
#pragma once

#include <array>
#include <deque>
#include <functional>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/core/key_state.h"

namespace seqd::allocator_internal {

class ParkedDeadlines {
 public:
  using Expire = std::function<void(const KeyRef&, uint64_t waiter_id)>;

  ParkedDeadlines(Clock& clock, Expire expire) : clock_(clock), expire_(std::move(expire)) {}
  ParkedDeadlines(const ParkedDeadlines&) = delete;
  ParkedDeadlines& operator=(const ParkedDeadlines&) = delete;

  // Calls expire(state, waiter_id) at or after `at`. Precondition: `at` is no
  // earlier than any earlier Add()'s from this thread by more than the
  // clock's resolution (true when every caller adds Now() + one duration).
  void Add(Clock::TimePoint at, KeyRef state, uint64_t waiter_id);

 private:
  struct Entry {
    Clock::TimePoint at;
    KeyRef state;
    uint64_t waiter_id;
  };
  struct Lane {
    mutable Mutex mu;
    std::deque<Entry> queue GUARDED_BY(mu);
    bool armed GUARDED_BY(mu) = false;  // a timer is set for queue.front().at
  };
  static constexpr size_t kLanes = 8;
  // A deadline is kept at most this late (a lane's timer batches what
  // comes due within it).
  static constexpr Clock::Duration kBatch = std::chrono::milliseconds(5);

  Lane& LaneOfThisThread();
  void Fire(Lane& lane);

  Clock& clock_;
  const Expire expire_;
  std::array<Lane, kLanes> lanes_;
};

}  // namespace seqd::allocator_internal
