#include "server/http/stream/long_poll.h"

#include <optional>
#include <utility>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"

namespace seqd {

namespace {

class LongPoll : public std::enable_shared_from_this<LongPoll> {
 public:
  LongPoll(const LongPollDeps& deps, PullRequest request)
      : messages_(deps.messages), metrics_(deps.metrics), request_(std::move(request)) {}

  // Subscribes, then pulls; `done` gets the answer (or the subscription's
  // error).
  void Start(const LongPollDeps& deps, std::chrono::milliseconds wait,
             std::unique_ptr<StreamLimits::Slot> slot, MessageCallback<MessagePage> done) {
    std::weak_ptr<LongPoll> weak = shared_from_this();
    const int64_t from = request_.from_seq;
    const std::optional<int64_t> to = request_.to_seq;
    Result<std::unique_ptr<Subscription>> sub = deps.messages.Subscribe(
        request_.conv_id, Hop::kMayForward, [weak, from, to](const StoredMessage& m) {
          if (m.seq < from || (to && m.seq > *to)) return;
          if (auto self = weak.lock()) self->Wake();
        });
    if (!sub) return done(sub.error());
    {
      MutexLock lock(mu_);
      subscription_ = std::move(sub).value();
      slot_ = std::move(slot);
      done_ = std::move(done);
    }
    if (metrics_) metrics_->LongPollStarted();
    deps.clock->RunAt(deps.clock->Now() + wait, [self = shared_from_this()] { self->Expire(); });
    PullNow();
  }

  // Server shutdown or the deadline: answer with the next pull.
  void Expire() {
    bool pull = false;
    {
      MutexLock lock(mu_);
      if (phase_ == Phase::kDone || !done_) return;
      expired_ = true;
      if (phase_ == Phase::kWaiting) {
        phase_ = Phase::kPulling;
        pull = true;
      }
    }
    if (pull) PullNow();
  }

 private:
  enum class Phase { kPulling, kWaiting, kDone };

  void Wake() {
    bool pull = false;
    {
      MutexLock lock(mu_);
      if (phase_ == Phase::kDone || !done_) return;
      if (phase_ == Phase::kPulling) {
        woken_ = true;  // the pull under way may have missed it
        return;
      }
      phase_ = Phase::kPulling;
      pull = true;
    }
    if (pull) PullNow();
  }

  void PullNow() {
    messages_.Pull(request_, [self = shared_from_this()](Result<MessagePage> r) {
      self->OnPulled(std::move(r));
    });
  }

  void OnPulled(Result<MessagePage> r) {
    std::unique_ptr<Subscription> subscription;
    std::unique_ptr<StreamLimits::Slot> slot;
    MessageCallback<MessagePage> done;
    {
      MutexLock lock(mu_);
      if (phase_ == Phase::kDone) return;
      const bool found = r && !r->messages.empty();
      if (!found && r && !expired_) {
        if (!woken_) {
          phase_ = Phase::kWaiting;
          return;
        }
        woken_ = false;
        lock.Unlock();
        return PullNow();
      }
      phase_ = Phase::kDone;
      subscription = std::move(subscription_);
      slot = std::move(slot_);
      done = std::move(done_);
    }
    if (metrics_) metrics_->LongPollEnded();
    subscription.reset();  // no more wakes; waits for one under way
    done(std::move(r));
  }

  MessageApi& messages_;
  StreamCounters* const metrics_;
  const PullRequest request_;
  Mutex mu_;
  Phase phase_ GUARDED_BY(mu_) = Phase::kPulling;
  bool woken_ GUARDED_BY(mu_) = false;
  bool expired_ GUARDED_BY(mu_) = false;
  std::unique_ptr<Subscription> subscription_ GUARDED_BY(mu_);
  std::unique_ptr<StreamLimits::Slot> slot_ GUARDED_BY(mu_);
  MessageCallback<MessagePage> done_ GUARDED_BY(mu_);
};

}  // namespace

void LongPull(const LongPollDeps& deps, PullRequest request, std::chrono::milliseconds wait,
              std::string_view token, MessageCallback<MessagePage> done) {
  if (wait.count() <= 0 || !deps.clock) {
    return deps.messages.Pull(std::move(request), std::move(done));
  }
  auto poll = std::make_shared<LongPoll>(deps, std::move(request));
  std::unique_ptr<StreamLimits::Slot> slot;
  if (deps.limits) {
    StreamLimits::Refusal refusal = StreamLimits::Refusal::kNone;
    slot = deps.limits->AcquireFor(token, poll, &LongPoll::Expire, &refusal);
    if (!slot) {
      const bool per_token = refusal == StreamLimits::Refusal::kPerToken;
      if (deps.metrics) deps.metrics->Refused(per_token);
      return done(MakeError(ErrorCode::kResourceExhausted,
                            per_token ? "too many open streams and long-polls for this token"
                                      : "too many open streams and long-polls"));
    }
  }
  poll->Start(deps, wait, std::move(slot), std::move(done));
}

}  // namespace seqd
