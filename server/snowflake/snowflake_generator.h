// Issues snowflake IDs from memory, as the worker id it was granted.
//
// It issues only while it holds a grant (WorkerLeaseKeeper gives it one
// after leasing a worker id from the store, extends it on every renewal and
// revokes it when the lease is lost). Every ID it issues has a timestamp
//   - above the grant's `not_before_ms` (the id's previous holder may have
//     used timestamps up to that),
//   - at or below the grant's `time_bound_ms` (persisted before it is used,
//     so the id's next holder starts above it),
//   - at or above every timestamp it issued before (IDs strictly increase).
// The grant's expiry is checked on the steady clock for the first ID of each
// millisecond; IDs continuing that millisecond skip the check (a clock read
// costs as much as the rest of an ID; the lease's margin dwarfs 1 ms).
// A request is answered inline when its IDs can be issued now. Otherwise it
// is parked and retried from a timer (Clock::RunAt), never by blocking:
//   - the sequence of this millisecond is used up: retried next millisecond;
//   - the wall clock moved back by at most `max_backward_ms`: retried when
//     it should have caught up (counted as a clock-back wait);
//   - the clock has not yet passed `not_before_ms`: retried then.
// A parked request that is not done by `wait_deadline` fails kNotServing.
// It fails kNotServing at once when there is no grant (or it expired), when
// the clock moved back by more than `max_backward_ms` (counted as a
// clock-back refusal), when the clock is past `time_bound_ms`, or when the
// wait for `not_before_ms` is longer than `wait_deadline`. Parked requests
// are answered before new ones (FIFO).
//
// Thread safety: every method is safe from any thread. Callbacks run exactly
// once, outside the internal lock: inline on the caller's thread, or on the
// thread that runs the Clock's timers.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/service/snowflake_api.h"
#include "server/service/snowflake_layout.h"
#include "server/snowflake/wall_clock.h"

namespace seqd {

class Metrics;

struct SnowflakeOptions {
  SnowflakeLayout layout;
  int64_t max_backward_ms = 5;  // clock moved back by more: refuse
  int64_t max_count = 4096;     // IDs per request
  Clock::Duration wait_deadline = std::chrono::seconds(1);
  Metrics* metrics = nullptr;  // optional; must outlive the generator
  // False with snowflake = off: listeners answer the snowflake routes and ops
  // as absent (HTTP 404, binary UNKNOWN_OPCODE).
  bool enabled = true;
};

class SnowflakeGenerator final : public SnowflakeApi {
 public:
  // `wall`, `clock` (and options.metrics) must outlive the generator.
  // REQUIRES: options.layout.Validate() ok, max_count >= 1.
  SnowflakeGenerator(const WallClock& wall, Clock& clock, SnowflakeOptions options);
  ~SnowflakeGenerator();
  SnowflakeGenerator(const SnowflakeGenerator&) = delete;
  SnowflakeGenerator& operator=(const SnowflakeGenerator&) = delete;

  // SnowflakeApi (server/service/snowflake_api.h). Next: see the file
  // comment for waiting and failing.
  const SnowflakeLayout& layout() const override { return options_.layout; }
  int64_t max_count() const override { return options_.max_count; }
  bool enabled() const override { return options_.enabled; }
  void Next(int64_t count, Callback done) override EXCLUDES(mu_);
  Result<SnowflakeFields> Decode(int64_t id) const override { return options_.layout.Decode(id); }

  // --- the grant (WorkerLeaseKeeper) ------------------------------------
  // Serve as `worker_id` (0..max_worker) until `valid_until`, with
  // timestamps in (not_before_ms, time_bound_ms]. A grant for a different
  // worker id than the last one starts a fresh sequence; the same id keeps
  // its last timestamp (IDs never go backwards within a process).
  void Grant(int worker_id, int64_t not_before_ms, int64_t time_bound_ms,
             Clock::TimePoint valid_until) EXCLUDES(mu_);
  // A renewal: moves `valid_until` and raises `time_bound_ms`. Ignored
  // without a grant (after Revoke, only Grant serves again).
  void Extend(int64_t time_bound_ms, Clock::TimePoint valid_until) EXCLUDES(mu_);
  // Stops serving; `why` is the kNotServing message until the next Grant.
  // Parked requests fail with it.
  void Revoke(std::string why) EXCLUDES(mu_);

  // The largest timestamp issued so far (unix ms), 0 if none: what a
  // release persists.
  int64_t last_time_ms() const EXCLUDES(mu_);
  SnowflakeStatus status() const override EXCLUDES(mu_);

  // Fails every parked request with kShuttingDown and refuses new ones.
  void Shutdown() EXCLUDES(mu_);

 private:
  struct Waiter {
    int64_t count = 0;
    SnowflakeIds ids;                          // issued so far
    std::optional<Clock::TimePoint> deadline;  // set when it is parked
    Callback done;
    bool counted_clock_back = false;  // metrics count a request once
    bool counted_sequence_wait = false;
  };
  enum class Step { kDone, kRetry, kFail };

  // Issues what it can to `w` now. On kRetry sets `retry_after` (how long
  // to wait); on kFail sets `error`.
  Step Fill(Waiter& w, std::chrono::microseconds& retry_after, Error& error) REQUIRES(mu_);
  // Runs the parked queue; arms the next timer if some are left.
  void Drain() EXCLUDES(mu_);
  void ArmLocked(std::chrono::microseconds after) REQUIRES(mu_);

  const WallClock& wall_;
  Clock& clock_;
  const SnowflakeOptions options_;

  mutable Mutex mu_;
  bool granted_ GUARDED_BY(mu_) = false;
  bool shutting_down_ GUARDED_BY(mu_) = false;
  std::string why_not_ GUARDED_BY(mu_) = "no worker id leased yet";
  int worker_id_ GUARDED_BY(mu_) = -1;
  int64_t not_before_ms_ GUARDED_BY(mu_) = 0;
  int64_t time_bound_ms_ GUARDED_BY(mu_) = 0;
  Clock::TimePoint valid_until_ GUARDED_BY(mu_) = {};
  int64_t lease_checked_ms_ GUARDED_BY(mu_) = -1;  // the millisecond the lease was last checked in
  int64_t last_ms_ GUARDED_BY(mu_) = 0;            // timestamp of the last ID issued
  int64_t sequence_ GUARDED_BY(mu_) = 0;           // sequence of the last ID issued within last_ms_
  std::deque<Waiter> parked_ GUARDED_BY(mu_);
  bool timer_armed_ GUARDED_BY(mu_) = false;
  Clock::TimePoint armed_at_ GUARDED_BY(mu_) = {};  // when the armed timer fires
  uint64_t issued_ GUARDED_BY(mu_) = 0;
  uint64_t clock_back_waits_ GUARDED_BY(mu_) = 0;
  uint64_t clock_back_refusals_ GUARDED_BY(mu_) = 0;
  uint64_t sequence_waits_ GUARDED_BY(mu_) = 0;
};

}  // namespace seqd
