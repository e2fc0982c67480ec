// Time and timers, behind an interface so tests drive them by hand.
//
// Thread safety: Now() and RunAt() are safe to call from any thread.
#pragma once

#include <chrono>
#include <functional>

namespace seqd {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Runs `fn` once, at or after `when`, never inline in the caller.
  // `fn` must not block: it may run on a network thread.
  virtual void RunAt(TimePoint when, std::function<void()> fn) = 0;
};

}  // namespace seqd
