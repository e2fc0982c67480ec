// A mutex in 4 bytes (std::mutex takes 40), for state kept per key, where
// a million keys make the difference. Uncontended: one compare-and-swap to
// lock and one exchange to unlock; contended: waits on the futex behind
// std::atomic::wait. Not recursive; no fairness promise.
//
// Thread safety: a mutex. Meets Lockable (std::lock_guard, unique_lock).
#pragma once

#include <atomic>
#include <cstdint>

namespace seqd {

class TinyMutex {
 public:
  void lock() {
    uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return;
    }
    // Mark the lock contended before sleeping, so unlock() knows to wake.
    while (state_.exchange(kContended, std::memory_order_acquire) != kUnlocked) {
      state_.wait(kContended, std::memory_order_relaxed);
    }
  }

  bool try_lock() {
    uint32_t expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kContended) state_.notify_one();
  }

 private:
  static constexpr uint32_t kUnlocked = 0, kLocked = 1, kContended = 2;
  std::atomic<uint32_t> state_{kUnlocked};
};

}  // namespace seqd
