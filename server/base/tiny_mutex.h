// A mutex in 4 bytes (std::mutex takes 40), for state kept per key, where
// a million keys make the difference. Uncontended: one compare-and-swap to
// lock and one exchange to unlock; contended: sleeps on a Linux futex
// (Drepper's "Futexes Are Tricky", mutex 2). The futex is called directly,
// not through std::atomic::wait, whose GCC 12 version routes every waiter
// and wake-up through a process-wide table of 16 shared counters. Not
// recursive; no fairness promise.
//
// Thread safety: a mutex, and a capability for the thread-safety analysis
// (hold it with LockGuard<TinyMutex>, common/mutex.h). Meets Lockable.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "common/thread_annotations.h"

namespace seqd {

class CAPABILITY("mutex") TinyMutex {
 public:
  void lock() ACQUIRE() {
    uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return;
    }
    // Mark the lock contended before sleeping, so unlock() knows to wake.
    while (state_.exchange(kContended, std::memory_order_acquire) != kUnlocked) {
      Futex(FUTEX_WAIT_PRIVATE, kContended);  // returns at once if no longer kContended
    }
  }

  bool try_lock() TRY_ACQUIRE(true) {
    uint32_t expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() RELEASE() {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kContended) {
      Futex(FUTEX_WAKE_PRIVATE, 1);
    }
  }

 private:
  static constexpr uint32_t kUnlocked = 0, kLocked = 1, kContended = 2;
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

  void Futex(int op, uint32_t value) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), op, value, nullptr, nullptr, 0);
  }
  std::atomic<uint32_t> state_{kUnlocked};
};

}  // namespace seqd
