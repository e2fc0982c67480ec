// A Clock that only moves when told to. For tests.
//
// Thread safety: all methods are safe to call concurrently; callbacks run on
// the thread that calls Advance(), outside the internal lock.
#pragma once

#include <map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"

namespace seqd {

class ManualClock final : public Clock {
 public:
  TimePoint Now() const override EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return now_;
  }

  void RunAt(TimePoint when, std::function<void()> fn) override EXCLUDES(mu_) {
    MutexLock lock(mu_);
    timers_.emplace(when, std::move(fn));
  }

  // Moves time forward and runs every timer that became due, in time order.
  void Advance(Duration by) EXCLUDES(mu_) {
    TimePoint target;
    {
      MutexLock lock(mu_);
      target = now_ + by;
    }
    for (;;) {
      std::function<void()> fn;
      {
        MutexLock lock(mu_);
        auto it = timers_.begin();
        if (it == timers_.end() || it->first > target) {
          now_ = target;
          return;
        }
        now_ = std::max(now_, it->first);
        fn = std::move(it->second);
        timers_.erase(it);
      }
      fn();
    }
  }

  size_t pending_timers() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return timers_.size();
  }

 private:
  mutable Mutex mu_;
  TimePoint now_ GUARDED_BY(mu_) = TimePoint(std::chrono::hours(1));
  std::multimap<TimePoint, std::function<void()>> timers_ GUARDED_BY(mu_);
};

}  // namespace seqd
