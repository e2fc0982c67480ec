// Leases a worker id from the store for the snowflake generator and keeps
// the lease alive (docs/snowflake.md, "Worker ids").
//
// Life of a lease:
//   1. Claim an id (WorkerLeaseStore::Claim), then Renew it once to persist
//      this process's time bound (wall clock + ttl). Only then Grant the
//      generator the id, with not_before = the bound the id's previous
//      holder persisted.
//   2. Renew every ttl/3, raising the persisted bound to wall clock + ttl
//      before the generator may use it (Extend).
//   3. The generator counts the lease from just BEFORE the renewal call was
//      sent, on the steady clock, minus a tenth of the ttl: the store set
//      the expiry from its own clock after that moment, so the generator
//      stops issuing before any other process can take the id over, whatever
//      the wall clocks say.
//   4. A renewal that fails because the store is down is retried every
//      `retry_interval`; the generator stops on its own when the lease runs
//      out. A renewal refused because another instance took the id over
//      revokes the generator at once and claims again (a new id).
//   5. Stop() releases the id, persisting the exact last issued timestamp,
//      so a restart on the same host:port gets it back without waiting.
//
// Thread safety: Start/Stop/status are safe from any thread. Store calls run
// on the TaskRunner only (one at a time); timers on the Clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/base/task_runner.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class Metrics;

struct LeaseKeeperOptions {
  std::string owner;  // "host:port" (config snowflake_owner)
  int max_workers = 1024;
  std::chrono::milliseconds ttl{30000};
  std::chrono::milliseconds retry_interval{1000};  // after a failed claim or renewal
  Metrics* metrics = nullptr;
};

struct LeaseKeeperStatus {
  std::string owner;
  std::string instance;
  int worker_id = -1;         // -1: none held
  int64_t expires_ms = 0;     // store clock, from the last claim/renewal
  int64_t time_bound_ms = 0;  // persisted
  std::string last_error;     // empty after a success
};

class WorkerLeaseKeeper {
 public:
  // Every reference must outlive the keeper, and the keeper must outlive
  // any task or timer it started (stop the Clock's timers and the runner
  // first; Stop() alone does not cancel a pending timer, it makes it a
  // no-op). Generates this process's random instance token.
  WorkerLeaseKeeper(WorkerLeaseStore& store, TaskRunner& db, Clock& clock, const WallClock& wall,
                    SnowflakeGenerator& generator, LeaseKeeperOptions options);
  // As above, on a runner of its own (one thread), so renewals never wait
  // behind other store work (a flood of new keys on the shared database
  // runner). The keeper's destructor finishes its queued work (the release).
  WorkerLeaseKeeper(WorkerLeaseStore& store, Clock& clock, const WallClock& wall,
                    SnowflakeGenerator& generator, LeaseKeeperOptions options);
  ~WorkerLeaseKeeper();

  // Starts claiming (at once) and renewing. Call once.
  void Start() EXCLUDES(mu_);
  // Stops the timers and, on the db runner, releases the id with the
  // generator's last issued timestamp. REQUIRES: the generator issues no
  // more IDs (Shutdown() first). The release is done when the runner's
  // queued work is (ThreadPoolRunner::Stop waits for it).
  void Stop() EXCLUDES(mu_);

  const std::string& instance() const { return instance_; }
  LeaseKeeperStatus status() const EXCLUDES(mu_);

  // One step (claim or renew), on the db runner. Public for tests, which
  // drive a ManualRunner and ManualClock; production calls it from timers.
  void Tick() EXCLUDES(mu_);

 private:
  void Schedule(std::chrono::milliseconds after);
  // Run on the db runner.
  void ClaimOnRunner() EXCLUDES(mu_);
  void RenewOnRunner() EXCLUDES(mu_);
  // Releases `worker_id` on the calling (db) thread.
  void ReleaseOnRunner(int worker_id, int64_t not_before_ms) EXCLUDES(mu_);
  // Records a failed store call (logged once per distinct message) and
  // schedules the next try.
  void Failed(const std::string& what, const Error& e, std::chrono::milliseconds retry)
      EXCLUDES(mu_);

  // The keeper's own runner (the second constructor); declared first so
  // `db_` can refer to it, and joined in the destructor.
  std::unique_ptr<ThreadPoolRunner> own_db_;
  WorkerLeaseStore& store_;
  TaskRunner& db_;
  Clock& clock_;
  const WallClock& wall_;
  SnowflakeGenerator& generator_;
  const LeaseKeeperOptions options_;
  const std::string instance_;

  mutable Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool busy_ GUARDED_BY(mu_) = false;  // a store call is queued or running
  int worker_id_ GUARDED_BY(mu_) = -1;
  int64_t not_before_ms_ GUARDED_BY(mu_) = 0;  // of the id held (or being claimed)
  // Claimed, not yet granted (a retried claim returns it again).
  int claiming_id_ GUARDED_BY(mu_) = -1;
  int64_t expires_ms_ GUARDED_BY(mu_) = 0;
  int64_t time_bound_ms_ GUARDED_BY(mu_) = 0;
  std::string last_error_ GUARDED_BY(mu_);
};

}  // namespace seqd
