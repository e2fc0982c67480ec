#include "server/snowflake/snowflake_generator.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "common/request_checks.h"
#include "server/metrics/metrics.h"

namespace seqd {
namespace {

Error NotServing(std::string message) {
  return MakeError(ErrorCode::kNotServing, std::move(message));
}

}  // namespace

SnowflakeGenerator::SnowflakeGenerator(const WallClock& wall, Clock& clock,
                                       SnowflakeOptions options)
    : wall_(wall), clock_(clock), options_(std::move(options)) {}

SnowflakeGenerator::~SnowflakeGenerator() = default;

void SnowflakeGenerator::Next(int64_t count, Callback done) {
  if (Status s = CheckCount(count, options_.max_count); !s) return done(s.error());
  Waiter w;
  w.count = count;
  w.done = std::move(done);
  w.ids.reserve(static_cast<size_t>(count));
  Error error;
  Step step;
  {
    MutexLock lock(mu_);
    if (shutting_down_) {
      step = Step::kFail;
      error = MakeError(ErrorCode::kShuttingDown, "server is shutting down");
    } else if (!parked_.empty()) {
      w.deadline = clock_.Now() + options_.wait_deadline;
      parked_.push_back(std::move(w));  // behind the parked ones; the timer is armed
      return;
    } else {
      std::chrono::microseconds retry{0};
      step = Fill(w, retry, error);
      if (step == Step::kRetry) {
        w.deadline = clock_.Now() + options_.wait_deadline;
        parked_.push_back(std::move(w));
        ArmLocked(retry);
        return;
      }
    }
  }
  if (step == Step::kDone) {
    if (options_.metrics) options_.metrics->SnowflakeIssued(count);
    w.done(std::move(w.ids));
  } else {
    w.done(std::move(error));
  }
}

SnowflakeGenerator::Step SnowflakeGenerator::Fill(Waiter& w, std::chrono::microseconds& retry_after,
                                                  Error& error) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  // The steady clock costs as much as the rest of an ID: read it only when
  // needed, at most once.
  std::optional<Clock::TimePoint> now_cache;
  auto now = [&] {
    if (!now_cache) now_cache = clock_.Now();
    return *now_cache;
  };
  // Would waiting `wait` more pass the request's deadline? (Not parked
  // yet: its deadline is wait_deadline from now.)
  auto too_late = [&](microseconds wait) {
    return w.deadline ? now() + wait > *w.deadline : wait > options_.wait_deadline;
  };
  auto retry = [&](microseconds wait, const char* what) {
    if (too_late(wait)) {
      error = NotServing(std::string("gave up waiting for ") + what);
      return Step::kFail;
    }
    retry_after = wait;
    return Step::kRetry;
  };
  if (!granted_) {
    error = NotServing(why_not_);
    return Step::kFail;
  }
  const int64_t now_us = wall_.NowUs();
  const int64_t t = now_us / 1000;
  // The lease is checked on the steady clock for the first ID of every
  // millisecond (and on every retry); the IDs that continue a checked
  // millisecond skip it. The lease's margin (a tenth of it) dwarfs 1 ms.
  // (Uniqueness across processes rests on the time bound checked below,
  // which is never skipped: a successor issues only above it.)
  if (t != lease_checked_ms_ || w.deadline) {
    if (now() >= valid_until_) {
      error = NotServing("the lease of worker id " + std::to_string(worker_id_) +
                         " was not renewed in time; not issuing IDs until it is");
      return Step::kFail;
    }
    lease_checked_ms_ = t;
  }
  if (t <= not_before_ms_) {
    const int64_t wait = not_before_ms_ - t + 1;
    if (too_late(milliseconds(wait))) {
      error =
          NotServing("waiting for the clock to pass the last timestamp issued under worker id " +
                     std::to_string(worker_id_) + " (" + std::to_string(wait) + " ms left)");
      return Step::kFail;
    }
    return retry(milliseconds(wait), "the clock to pass the worker id's last issued timestamp");
  }
  if (t < last_ms_) {
    const int64_t back = last_ms_ - t;
    if (back > options_.max_backward_ms) {
      ++clock_back_refusals_;
      if (options_.metrics) options_.metrics->SnowflakeClockBack(/*refused=*/true);
      error = NotServing(
          "the clock moved back by " + std::to_string(back) +
          " ms (more than snowflake_max_backward_ms = " + std::to_string(options_.max_backward_ms) +
          "); not issuing IDs until it passes " + std::to_string(last_ms_));
      return Step::kFail;
    }
    if (!w.counted_clock_back) {
      w.counted_clock_back = true;
      ++clock_back_waits_;
      if (options_.metrics) options_.metrics->SnowflakeClockBack(/*refused=*/false);
    }
    return retry(milliseconds(back), "the clock to catch up after it moved back");
  }
  if (t > time_bound_ms_) {
    error = NotServing("the clock is past the time bound persisted with the lease of worker id " +
                       std::to_string(worker_id_) + "; not issuing IDs until the next renewal");
    return Step::kFail;
  }
  if (t > options_.layout.max_time_ms() || t < options_.layout.epoch_ms) {
    error = NotServing("the clock is outside the times the layout can hold (epoch " +
                       std::to_string(options_.layout.epoch_ms) + " to " +
                       std::to_string(options_.layout.max_time_ms()) + ")");
    return Step::kFail;
  }
  const int64_t max_sequence = options_.layout.max_sequence();
  while (static_cast<int64_t>(w.ids.size()) < w.count) {
    if (t > last_ms_) {
      last_ms_ = t;
      sequence_ = 0;
    } else if (sequence_ < max_sequence) {
      ++sequence_;
    } else {
      if (!w.counted_sequence_wait) {
        w.counted_sequence_wait = true;
        ++sequence_waits_;
        if (options_.metrics) options_.metrics->SnowflakeSequenceWait();
      }
      // Until the next millisecond starts (to the microsecond).
      return retry(microseconds((last_ms_ + 1) * 1000 - now_us), "the next millisecond");
    }
    w.ids.push_back(options_.layout.Compose(last_ms_, worker_id_, sequence_));
    ++issued_;
  }
  return Step::kDone;
}

void SnowflakeGenerator::ArmLocked(std::chrono::microseconds after) {
  const Clock::TimePoint at = clock_.Now() + after;
  // A timer already due no later does the job; one due later (left from a
  // revoked grant's wait) must not delay this one. An extra Drain is harmless.
  if (timer_armed_ && armed_at_ <= at) return;
  timer_armed_ = true;
  armed_at_ = at;
  clock_.RunAt(at, [this] { Drain(); });
}

void SnowflakeGenerator::Drain() {
  std::vector<std::pair<Callback, Result<SnowflakeIds>>> answers;
  int64_t issued = 0;
  {
    MutexLock lock(mu_);
    timer_armed_ = false;
    while (!parked_.empty()) {
      Waiter& w = parked_.front();
      Error error;
      std::chrono::microseconds retry{0};
      const Step step = Fill(w, retry, error);
      if (step == Step::kRetry) {
        ArmLocked(retry);
        break;
      }
      if (step == Step::kDone) {
        issued += w.count;
        answers.emplace_back(std::move(w.done), std::move(w.ids));
      } else {
        answers.emplace_back(std::move(w.done), std::move(error));
      }
      parked_.pop_front();
    }
  }
  if (issued > 0 && options_.metrics) options_.metrics->SnowflakeIssued(issued);
  for (auto& [done, result] : answers) done(std::move(result));
}

void SnowflakeGenerator::Grant(int worker_id, int64_t not_before_ms, int64_t time_bound_ms,
                               Clock::TimePoint valid_until) {
  {
    MutexLock lock(mu_);
    if (worker_id != worker_id_ && last_ms_ > 0) {
      // Another worker id: the same millisecond under it could give smaller
      // IDs than those already issued, so start at the next one.
      sequence_ = options_.layout.max_sequence();
    }
    granted_ = true;
    lease_checked_ms_ = -1;
    worker_id_ = worker_id;
    not_before_ms_ = not_before_ms;
    time_bound_ms_ = time_bound_ms;
    valid_until_ = valid_until;
    why_not_.clear();
    if (!parked_.empty()) ArmLocked(std::chrono::microseconds(0));
  }
}

void SnowflakeGenerator::Extend(int64_t time_bound_ms, Clock::TimePoint valid_until) {
  MutexLock lock(mu_);
  if (!granted_) return;
  time_bound_ms_ = std::max(time_bound_ms_, time_bound_ms);
  valid_until_ = std::max(valid_until_, valid_until);
}

void SnowflakeGenerator::Revoke(std::string why) {
  std::deque<Waiter> failed;
  {
    MutexLock lock(mu_);
    granted_ = false;
    why_not_ = why;
    failed.swap(parked_);
  }
  for (Waiter& w : failed) w.done(NotServing(why));
}

int64_t SnowflakeGenerator::last_time_ms() const {
  MutexLock lock(mu_);
  return last_ms_;
}

SnowflakeStatus SnowflakeGenerator::status() const {
  const Clock::TimePoint now = clock_.Now();
  MutexLock lock(mu_);
  SnowflakeStatus s;
  // The checks Fill makes, without waiting: a request now would fail (or
  // wait for the clock) for the reason given.
  const int64_t t = wall_.NowMs();
  const std::string id = std::to_string(worker_id_);
  if (shutting_down_) {
    s.why_not = "server is shutting down";
  } else if (!granted_) {
    s.why_not = why_not_;
  } else if (now >= valid_until_) {
    s.why_not = "the lease of worker id " + id + " was not renewed in time";
  } else if (t <= not_before_ms_) {
    s.why_not = "waiting for the clock to pass the last timestamp issued under worker id " + id +
                " (" + std::to_string(not_before_ms_ - t + 1) + " ms left)";
  } else if (t < last_ms_ - options_.max_backward_ms) {
    s.why_not = "the clock is " + std::to_string(last_ms_ - t) +
                " ms behind the last issued timestamp (more than snowflake_max_backward_ms)";
  } else if (t > time_bound_ms_) {
    s.why_not = "the clock is past the time bound persisted with the lease of worker id " + id;
  }
  s.serving = s.why_not.empty();
  s.worker_id = granted_ ? worker_id_ : -1;
  s.last_time_ms = last_ms_;
  s.not_before_ms = not_before_ms_;
  s.time_bound_ms = time_bound_ms_;
  s.lease_left_s = granted_ ? std::chrono::duration<double>(valid_until_ - now).count() : 0;
  s.parked = parked_.size();
  s.issued = issued_;
  s.clock_back_waits = clock_back_waits_;
  s.clock_back_refusals = clock_back_refusals_;
  s.sequence_waits = sequence_waits_;
  return s;
}

void SnowflakeGenerator::Shutdown() {
  std::deque<Waiter> failed;
  {
    MutexLock lock(mu_);
    shutting_down_ = true;
    failed.swap(parked_);
  }
  for (Waiter& w : failed) w.done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
}

}  // namespace seqd
