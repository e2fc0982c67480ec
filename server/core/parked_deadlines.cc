#include "server/core/parked_deadlines.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace seqd::allocator_internal {

ParkedDeadlines::Lane& ParkedDeadlines::LaneOfThisThread() {
  static std::atomic<size_t> next_lane{0};
  thread_local const size_t lane = next_lane.fetch_add(1, std::memory_order_relaxed);
  return lanes_[lane % kLanes];
}

void ParkedDeadlines::Add(Clock::TimePoint at, KeyRef state, uint64_t waiter_id) {
  Lane& lane = LaneOfThisThread();
  bool arm = false;
  {
    MutexLock lock(lane.mu);
    lane.queue.push_back(Entry{at, std::move(state), waiter_id});
    arm = !lane.armed;
    lane.armed = true;
  }
  // Only the head's timer is ever set: later entries are due no sooner.
  if (arm) clock_.RunAt(at, [this, &lane] { Fire(lane); });
}

void ParkedDeadlines::Fire(Lane& lane) {
  std::vector<Entry> due;
  Clock::TimePoint next{};
  bool rearm = false;
  const Clock::TimePoint now = clock_.Now();
  {
    MutexLock lock(lane.mu);
    while (!lane.queue.empty() && lane.queue.front().at <= now) {
      due.push_back(std::move(lane.queue.front()));
      lane.queue.pop_front();
    }
    if (lane.queue.empty()) {
      lane.armed = false;
    } else {
      rearm = true;
      next = lane.queue.front().at;
    }
  }
  // Not sooner than kBatch from now: during a storm of parked requests a
  // lane fires every few milliseconds for all that came due, not once per
  // request.
  if (rearm) clock_.RunAt(std::max(next, now + kBatch), [this, &lane] { Fire(lane); });
  for (const Entry& e : due) expire_(e.state, e.waiter_id);
}

}  // namespace seqd::allocator_internal
