// Where blocking work (database calls) runs.
//
// Thread safety: Post() and TryPost() are safe from any thread.
#pragma once

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <deque>
#include <functional>
#include <optional>

#include "common/mutex.h"
#include "common/shed_scope.h"
#include "common/thread_annotations.h"

namespace seqd {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Queues `task`; it runs later on a runner thread, never inline, always
  // exactly once. A bounded runner that is full runs it at once on its
  // overflow thread under a ShedScope (storage/store_shedding.h): its
  // store calls fail fast with kStoreUnavailable.
  virtual void Post(std::function<void()> task) = 0;
  // As Post, but false (and `task` dropped, never run) if the runner's
  // queue is full. For callers that answer the refusal themselves.
  virtual bool TryPost(std::function<void()> task) {
    Post(std::move(task));
    return true;
  }
};

// A fixed pool of threads dedicated to blocking calls, with at most
// `max_queued` tasks waiting for a thread (0: no bound). Beyond the bound,
// Post() sheds (see TaskRunner::Post) and TryPost() refuses; both count in
// refused().
class ThreadPoolRunner final : public TaskRunner {
 public:
  explicit ThreadPoolRunner(size_t threads, size_t max_queued = 0)
      : pool_(threads), max_queued_(max_queued) {
    if (max_queued_ > 0) overflow_.emplace(1);
  }
  ~ThreadPoolRunner() override { Stop(); }

  void Post(std::function<void()> task) override {
    if (Admit()) return Enqueue(std::move(task));
    refused_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(*overflow_, [task = std::move(task)] {
      ShedScope shed;
      task();
    });
  }
  bool TryPost(std::function<void()> task) override {
    if (!Admit()) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    Enqueue(std::move(task));
    return true;
  }
  // Finishes queued work, then joins. Idempotent.
  void Stop() {
    pool_.join();
    if (overflow_) overflow_->join();
  }

  // Tasks waiting for a thread now; tasks refused or shed so far.
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  int64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  // Takes a queue slot if one is free.
  bool Admit() {
    size_t q = queued_.load(std::memory_order_relaxed);
    do {
      if (max_queued_ > 0 && q >= max_queued_) return false;
    } while (!queued_.compare_exchange_weak(q, q + 1, std::memory_order_relaxed));
    return true;
  }
  void Enqueue(std::function<void()> task) {
    boost::asio::post(pool_, [this, task = std::move(task)] {
      queued_.fetch_sub(1, std::memory_order_relaxed);
      task();
    });
  }

  boost::asio::thread_pool pool_;
  std::optional<boost::asio::thread_pool> overflow_;  // bounded runners only
  const size_t max_queued_;
  std::atomic<size_t> queued_{0};
  std::atomic<int64_t> refused_{0};
};

// Stops a ThreadPoolRunner when destroyed. Declared after everything the
// runner's tasks reach (an allocator, its stores), it makes those tasks end
// before any of that is destroyed.
class StopRunnerOnExit {
 public:
  explicit StopRunnerOnExit(ThreadPoolRunner& runner) : runner_(runner) {}
  ~StopRunnerOnExit() { runner_.Stop(); }
  StopRunnerOnExit(const StopRunnerOnExit&) = delete;
  StopRunnerOnExit& operator=(const StopRunnerOnExit&) = delete;

 private:
  ThreadPoolRunner& runner_;
};

// Queues tasks until the test runs them. For deterministic unit tests.
class ManualRunner final : public TaskRunner {
 public:
  void Post(std::function<void()> task) override EXCLUDES(mu_) {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  // Runs queued tasks (and any they queue) until none are left. Returns how many ran.
  int RunAll() EXCLUDES(mu_) {
    int n = 0;
    while (RunOne()) ++n;
    return n;
  }
  bool RunOne() EXCLUDES(mu_) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      if (tasks_.empty()) return false;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    return true;
  }
  size_t pending() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return tasks_.size();
  }

 private:
  mutable Mutex mu_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
};

}  // namespace seqd
