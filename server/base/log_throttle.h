// At most one log line an interval (a second unless said otherwise) from
// one place, with the count of the lines left out since the last one: for
// what fails on every request while a dependency is down or a client
// retries.
//
// Thread safety: every method is safe from any thread; lock-free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace seqd {

class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::milliseconds interval = std::chrono::seconds(1))
      : interval_ms_(interval.count()), last_ms_(-interval_ms_) {}

  // If a line may be logged now: how many were left out before it (the
  // count starts again). Else nullopt, and this line counts as left out.
  std::optional<uint64_t> Take() {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
    int64_t last = last_ms_.load(std::memory_order_relaxed);
    if (now_ms - last < interval_ms_ || !last_ms_.compare_exchange_strong(last, now_ms)) {
      left_out_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    return left_out_.exchange(0, std::memory_order_relaxed);
  }

 private:
  const int64_t interval_ms_;
  std::atomic<int64_t> last_ms_;
  std::atomic<uint64_t> left_out_{0};
};

}  // namespace seqd
