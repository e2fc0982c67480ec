#include "server/snowflake/worker_lease_keeper.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "server/base/log.h"
#include "server/metrics/metrics.h"

namespace seqd {
namespace {

// 32 hex digits, different for every process start.
std::string NewInstanceToken() {
  std::random_device rd;
  const uint64_t a = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  const uint64_t b =
      (uint64_t{rd()} << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace

WorkerLeaseKeeper::WorkerLeaseKeeper(WorkerLeaseStore& store, TaskRunner& db, Clock& clock,
                                     const WallClock& wall, SnowflakeGenerator& generator,
                                     LeaseKeeperOptions options)
    : store_(store),
      db_(db),
      clock_(clock),
      wall_(wall),
      generator_(generator),
      options_(std::move(options)),
      instance_(NewInstanceToken()) {}

WorkerLeaseKeeper::WorkerLeaseKeeper(WorkerLeaseStore& store, Clock& clock, const WallClock& wall,
                                     SnowflakeGenerator& generator, LeaseKeeperOptions options)
    : own_db_(std::make_unique<ThreadPoolRunner>(1)),
      store_(store),
      db_(*own_db_),
      clock_(clock),
      wall_(wall),
      generator_(generator),
      options_(std::move(options)),
      instance_(NewInstanceToken()) {}

WorkerLeaseKeeper::~WorkerLeaseKeeper() {
  if (own_db_) own_db_->Stop();  // queued work still uses the members
}

void WorkerLeaseKeeper::Start() { Tick(); }

void WorkerLeaseKeeper::Tick() {
  bool claim = false;
  {
    MutexLock lock(mu_);
    if (stopped_ || busy_) return;
    busy_ = true;
    claim = worker_id_ < 0;
  }
  db_.Post([this, claim] { claim ? ClaimOnRunner() : RenewOnRunner(); });
}

void WorkerLeaseKeeper::Schedule(std::chrono::milliseconds after) {
  clock_.RunAt(clock_.Now() + after, [this] { Tick(); });
}

void WorkerLeaseKeeper::ClaimOnRunner() {
  const int64_t ttl_ms = options_.ttl.count();
  auto claimed =
      store_.Claim(ClaimRequest{options_.owner, instance_, options_.max_workers, ttl_ms});
  if (!claimed) return Failed("claiming a worker id", claimed.error(), options_.retry_interval);
  const int id = claimed->worker_id;
  int64_t not_before = claimed->time_bound_ms;
  {
    MutexLock lock(mu_);
    if (claimed->reclaimed && claiming_id_ == id) {
      // Our own retried claim, nobody else held the row meanwhile: the
      // bound we read first (the row may now carry one we persisted).
      not_before = not_before_ms_;
    } else {
      claiming_id_ = id;
      not_before_ms_ = not_before;
    }
  }
  // Persist this process's bound before issuing anything under the id.
  const int64_t bound = std::max(not_before, wall_.NowMs() + ttl_ms);
  const Clock::TimePoint sent = clock_.Now();
  auto renewed = store_.Renew(id, instance_, ttl_ms, bound);
  if (!renewed) {
    if (renewed.error().code == ErrorCode::kFailedPrecondition) {
      MutexLock lock(mu_);
      claiming_id_ = -1;  // taken over meanwhile: forget the bound we read
    }
    return Failed("persisting the time bound of worker id " + std::to_string(id), renewed.error(),
                  options_.retry_interval);
  }
  bool stopped;
  {
    MutexLock lock(mu_);
    stopped = stopped_;
    worker_id_ = id;
    claiming_id_ = -1;
    expires_ms_ = renewed->expires_ms;
    time_bound_ms_ = renewed->time_bound_ms;
    last_error_.clear();
    busy_ = false;
  }
  if (options_.metrics) options_.metrics->SnowflakeLeaseRenewal(true);
  if (stopped) return ReleaseOnRunner(id, not_before);
  generator_.Grant(id, not_before, renewed->time_bound_ms, sent + options_.ttl - options_.ttl / 10);
  SEQD_LOG(kInfo) << "snowflake: leased worker id " << id << " as " << options_.owner
                  << "; IDs start after unix ms " << not_before;
  Schedule(options_.ttl / 3);
}

void WorkerLeaseKeeper::RenewOnRunner() {
  int id;
  {
    MutexLock lock(mu_);
    id = worker_id_;
  }
  const int64_t ttl_ms = options_.ttl.count();
  const Clock::TimePoint sent = clock_.Now();
  auto renewed = store_.Renew(id, instance_, ttl_ms, wall_.NowMs() + ttl_ms);
  if (!renewed) {
    if (renewed.error().code == ErrorCode::kFailedPrecondition) {
      generator_.Revoke("worker id " + std::to_string(id) +
                        " was taken over by another process after its lease ran out; "
                        "leasing a new one");
      {
        MutexLock lock(mu_);
        worker_id_ = -1;
      }
      return Failed("renewing worker id " + std::to_string(id), renewed.error(),
                    std::chrono::milliseconds(0));
    }
    return Failed("renewing worker id " + std::to_string(id), renewed.error(),
                  options_.retry_interval);
  }
  int64_t not_before;
  bool stopped;
  {
    MutexLock lock(mu_);
    stopped = stopped_;
    not_before = not_before_ms_;
    expires_ms_ = renewed->expires_ms;
    time_bound_ms_ = renewed->time_bound_ms;
    if (!last_error_.empty()) {
      SEQD_LOG(kInfo) << "snowflake: worker id " << id << " renewed again";
    }
    last_error_.clear();
    busy_ = false;
  }
  if (options_.metrics) options_.metrics->SnowflakeLeaseRenewal(true);
  if (stopped) return ReleaseOnRunner(id, not_before);
  generator_.Extend(renewed->time_bound_ms, sent + options_.ttl - options_.ttl / 10);
  Schedule(options_.ttl / 3);
}

void WorkerLeaseKeeper::Failed(const std::string& what, const Error& e,
                               std::chrono::milliseconds retry) {
  const std::string message = what + ": " + e.message;
  bool stopped;
  int id;
  int64_t not_before;
  {
    MutexLock lock(mu_);
    if (message != last_error_) {
      SEQD_LOG(kWarn) << "snowflake: " << message;
      last_error_ = message;
    }
    busy_ = false;
    stopped = stopped_;
    id = worker_id_;
    not_before = not_before_ms_;
  }
  if (options_.metrics) options_.metrics->SnowflakeLeaseRenewal(false);
  if (stopped) {
    if (id >= 0) ReleaseOnRunner(id, not_before);
    return;
  }
  // Without an id, requests say why (a held id keeps serving until its
  // lease runs out).
  if (id < 0) generator_.Revoke("no worker id leased: " + message);
  Schedule(retry);
}

void WorkerLeaseKeeper::Stop() {
  int id;
  int64_t not_before;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    if (busy_) return;  // the call in flight releases when it ends
    id = worker_id_;
    not_before = not_before_ms_;
  }
  if (id >= 0) db_.Post([this, id, not_before] { ReleaseOnRunner(id, not_before); });
}

void WorkerLeaseKeeper::ReleaseOnRunner(int worker_id, int64_t not_before_ms) {
  const int64_t last = std::max(generator_.last_time_ms(), not_before_ms);
  Status st = store_.Release(worker_id, instance_, last);
  if (st) {
    SEQD_LOG(kInfo) << "snowflake: released worker id " << worker_id << " (last timestamp " << last
                    << ")";
  } else {
    SEQD_LOG(kWarn) << "snowflake: releasing worker id " << worker_id
                    << " failed (it expires by itself): " << st.error().message;
  }
  MutexLock lock(mu_);
  worker_id_ = -1;
}

LeaseKeeperStatus WorkerLeaseKeeper::status() const {
  MutexLock lock(mu_);
  LeaseKeeperStatus s;
  s.owner = options_.owner;
  s.instance = instance_;
  s.worker_id = worker_id_;
  s.expires_ms = expires_ms_;
  s.time_bound_ms = time_bound_ms_;
  s.last_error = last_error_;
  return s;
}

}  // namespace seqd
