// A Clock that only moves when told to. For tests.
//
// Thread safety: all methods are safe to call concurrently; callbacks run on
// the thread that calls Advance(), outside the internal lock.
#pragma once

#include <map>
#include <mutex>

#include "server/base/clock.h"

namespace seqd {

class ManualClock final : public Clock {
 public:
  TimePoint Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }

  void RunAt(TimePoint when, std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    timers_.emplace(when, std::move(fn));
  }

  // Moves time forward and runs every timer that became due, in time order.
  void Advance(Duration by) {
    TimePoint target;
    {
      std::lock_guard lock(mu_);
      target = now_ + by;
    }
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard lock(mu_);
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

  size_t pending_timers() const {
    std::lock_guard lock(mu_);
    return timers_.size();
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1)};                    // guarded by mu_
  std::multimap<TimePoint, std::function<void()>> timers_;  // guarded by mu_
};

}  // namespace seqd
