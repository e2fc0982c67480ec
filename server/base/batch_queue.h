// Group commit for blocking work: items added from any thread are handed to
// a flush function on a TaskRunner in batches, oldest first. At most
// `max_flushes` flushes run at once, each with at most `max_batch` items;
// items added while every flush slot is busy wait for the next flush, so a
// burst costs a few flushes, not one each. An item added while a slot is
// free is flushed at once (no batching delay when the store keeps up).
//
// At most `max_pending` items wait (0: no bound); Add() refuses beyond it.
//
// Thread safety: Add() is safe from any thread and never blocks on I/O.
// `flush` runs on the runner (under a ShedScope when the runner sheds it:
// its store calls then fail fast), never inline in Add().
//
// Lifetime: the queue must outlive every flush it posted (stop the runner
// first).
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/task_runner.h"

namespace seqd {

template <typename T>
class BatchQueue {
 public:
  using FlushFn = std::function<void(std::vector<T>)>;

  // REQUIRES: max_batch >= 1, max_flushes >= 1.
  BatchQueue(TaskRunner& runner, size_t max_batch, size_t max_flushes, size_t max_pending,
             FlushFn flush)
      : runner_(runner),
        max_batch_(max_batch),
        max_flushes_(max_flushes),
        max_pending_(max_pending),
        flush_(std::move(flush)) {}

  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  // False (and `item` dropped) if max_pending items wait already.
  [[nodiscard]] bool Add(T item) EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      if (max_pending_ > 0 && pending_.size() >= max_pending_) return false;
      pending_.push_back(std::move(item));
      // A queued flush takes it, or a running one posts the next when done.
      if (queued_ > 0 || flushing_ >= max_flushes_) return true;
      ++flushing_;
      ++queued_;
    }
    runner_.Post([this] { FlushOnce(); });
    return true;
  }

  // Items waiting for a flush now.
  size_t pending() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return pending_.size();
  }

 private:
  // One batch, then the next one goes to the back of the runner's queue, so
  // other work queued meanwhile is not starved.
  void FlushOnce() EXCLUDES(mu_) {
    std::vector<T> batch;
    {
      MutexLock lock(mu_);
      --queued_;
      const size_t n = std::min(max_batch_, pending_.size());
      batch.reserve(n);
      std::move(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(n),
                std::back_inserter(batch));
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(n));
    }
    if (!batch.empty()) {
      // The flush function should not throw; if it does (bad_alloc), the
      // queue keeps its slot count right and goes on with the next batch.
      try {
        flush_(std::move(batch));
      } catch (...) {
      }
    }
    {
      MutexLock lock(mu_);
      if (pending_.empty() || queued_ > 0) {  // nothing left, or a queued flush takes it
        --flushing_;
        return;
      }
      ++queued_;
    }
    runner_.Post([this] { FlushOnce(); });
  }

  TaskRunner& runner_;
  const size_t max_batch_;
  const size_t max_flushes_;
  const size_t max_pending_;
  const FlushFn flush_;
  mutable Mutex mu_;
  std::deque<T> pending_ GUARDED_BY(mu_);
  size_t flushing_ GUARDED_BY(mu_) = 0;  // flushes posted or running
  size_t queued_ GUARDED_BY(mu_) = 0;    // of those, posted and not started
};

}  // namespace seqd
