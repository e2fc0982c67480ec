// Where blocking work (database calls) runs.
//
// Thread safety: Post() is safe from any thread.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <deque>
#include <functional>
#include <mutex>

namespace seqd {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Queues `task`; it runs later on a runner thread, never inline.
  virtual void Post(std::function<void()> task) = 0;
};

// A fixed pool of threads dedicated to blocking calls.
class ThreadPoolRunner final : public TaskRunner {
 public:
  explicit ThreadPoolRunner(size_t threads) : pool_(threads) {}
  ~ThreadPoolRunner() override { Stop(); }
  void Post(std::function<void()> task) override { boost::asio::post(pool_, std::move(task)); }
  // Finishes queued work, then joins. Idempotent.
  void Stop() { pool_.join(); }

 private:
  boost::asio::thread_pool pool_;
};

// Queues tasks until the test runs them. For deterministic unit tests.
class ManualRunner final : public TaskRunner {
 public:
  void Post(std::function<void()> task) override {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  // Runs queued tasks (and any they queue) until none are left. Returns how many ran.
  int RunAll() {
    int n = 0;
    while (RunOne()) ++n;
    return n;
  }
  bool RunOne() {
    std::function<void()> task;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty()) return false;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    return true;
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return tasks_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
};

}  // namespace seqd
