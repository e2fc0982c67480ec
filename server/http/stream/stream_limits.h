// What held HTTP requests (Server-Sent Events streams and waiting
// long-polls) may take: a slot each, at most `max_total` in all and
// `max_per_token` per token (not counted when tokens are off), and a way
// to end them all at server shutdown.
//
// Thread safety: every method is safe from any thread. Cancel callbacks
// run on the thread that calls CancelAll(), without the lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace seqd {

class StreamLimits : public std::enable_shared_from_this<StreamLimits> {
 public:
  StreamLimits(size_t max_total, size_t max_per_token)
      : max_total_(max_total), max_per_token_(max_per_token) {}

  // Held while the request is; released (and its cancel callback
  // forgotten) when destroyed, on any thread.
  class Slot {
   public:
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    friend class StreamLimits;
    Slot(std::shared_ptr<StreamLimits> limits, std::string token, uint64_t id)
        : limits_(std::move(limits)), token_(std::move(token)), id_(id) {}
    std::shared_ptr<StreamLimits> limits_;
    std::string token_;
    uint64_t id_;
  };

  enum class Refusal { kNone, kTotal, kPerToken };
  // A slot for a request of `token` ("" when tokens are off: only the total
  // applies); `cancel` runs if CancelAll() comes while it is held. Null,
  // with the refusal's reason, over a limit.
  std::unique_ptr<Slot> Acquire(std::string_view token, std::function<void()> cancel,
                                Refusal* refusal) EXCLUDES(mu_);
  // Acquire() for a request held by `holder`: CancelAll() calls its `cancel`
  // if it still lives (the slot holds it weakly).
  template <typename Holder>
  std::unique_ptr<Slot> AcquireFor(std::string_view token, const std::shared_ptr<Holder>& holder,
                                   void (Holder::*cancel)(), Refusal* refusal) EXCLUDES(mu_) {
    std::function<void()> on_cancel = [weak = std::weak_ptr<Holder>(holder), cancel] {
      if (std::shared_ptr<Holder> h = weak.lock()) ((*h).*cancel)();
    };
    return Acquire(token, std::move(on_cancel), refusal);
  }

  // Runs every held slot's cancel callback (server shutdown); slots taken
  // later are refused.
  void CancelAll() EXCLUDES(mu_);

  size_t held() const EXCLUDES(mu_);
  size_t max_total() const { return max_total_; }
  size_t max_per_token() const { return max_per_token_; }

 private:
  void Release(const std::string& token, uint64_t id) EXCLUDES(mu_);

  const size_t max_total_;
  const size_t max_per_token_;
  mutable Mutex mu_;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::function<void()>> cancels_ GUARDED_BY(mu_);
  std::map<std::string, size_t, std::less<>> per_token_ GUARDED_BY(mu_);
};

}  // namespace seqd
