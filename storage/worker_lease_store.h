// The durable side of snowflake worker ids: the table `seqd_worker_lease`,
// next to leaf_alloc in the --store database (docs/snowflake.md).
//
// One row per worker id that was ever leased:
//   worker_id   INT primary key, 0 <= worker_id < max_workers
//   owner       who holds (or last held) it, "host:port"
//   instance    a random token of the holding process; a lease is held by
//               an instance, not by an owner (two processes may report the
//               same host:port by mistake; they still never share an id)
//   expires_ms  when the lease ends, in the STORE's clock (unix millis);
//               0 after a release
//   time_bound_ms  no ID with a timestamp above this was issued under the
//               id (the holder persists an upper bound before issuing)
//
// Time: every expiry is computed and compared with the store's own clock
// (MySQL NOW(3), SQLite 'now'), never the caller's, so processes on hosts
// whose clocks disagree still agree on who holds what. A holder must count
// its lease from before it sent the call (see WorkerLeaseKeeper).
//
// Claims are optimistic (insert a free id, or take over an expired row with
// a conditional UPDATE); a lost race is retried inside Claim, so concurrent
// claimers in any number of processes end with distinct ids.
//
// Thread safety: every implementation is safe to call from many threads at
// once. Calls BLOCK on I/O: run them on database threads only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace seqd {

struct WorkerLease {
  int worker_id = -1;
  std::string owner;
  std::string instance;
  int64_t expires_ms = 0;     // store clock, unix millis
  int64_t time_bound_ms = 0;  // see the table comment
  int64_t store_now_ms = 0;   // the store's clock when the call ran
  // Claim only: the row was already this instance's (preference 1), so
  // time_bound_ms may be a bound this instance persisted itself.
  bool reclaimed = false;
};

struct ClaimRequest {
  std::string owner;       // "host:port"; at most 255 bytes
  std::string instance;    // this process's token; 1..64 bytes
  int max_workers = 1024;  // ids are 0 .. max_workers-1; 1 <= max_workers <= 1<<20
  int64_t ttl_ms = 30000;  // lease length; 0 < ttl_ms <= one year (365 days)
};

class WorkerLeaseStore {
 public:
  virtual ~WorkerLeaseStore() = default;

  // Creates the table if it does not exist. Idempotent.
  virtual Status EnsureSchema() = 0;

  // Leases one worker id to `r.instance` for `r.ttl_ms` (store clock), in
  // this order of preference (rows with worker_id >= max_workers are never
  // considered; a row counts as expired when expires_ms <= store-now):
  //   1. a row already held by r.instance (a repeated claim);
  //   2. an expired (or released) row whose owner is r.owner, the lowest;
  //   3. the lowest id < max_workers with no row (inserted);
  //   4. the expired row that expired longest ago.
  // A row with an unexpired lease of another instance is never taken, even
  // when its owner equals r.owner. The returned lease carries the row's
  // time_bound_ms as it was BEFORE this claim (0 for a new row): the caller
  // must not issue IDs at or below it. The row's owner and instance become
  // r's; its time_bound_ms is left as it was.
  // Errors: kInvalidArgument for a bad request; kNotServing "all N worker ids
  // are leased" when no id is free; kStoreUnavailable on I/O.
  virtual Result<WorkerLease> Claim(const ClaimRequest& r) = 0;

  // Extends the lease of `worker_id` held by `instance` to store-now + ttl_ms
  // and raises time_bound_ms to `time_bound_ms` (never lowers it). Works
  // after expiry as long as no other instance took the row over.
  // Errors: kFailedPrecondition "worker id N is no longer leased to this
  // process" if the row's instance differs (or the row is gone);
  // kInvalidArgument if worker_id < 0, instance is not 1..64 bytes or ttl_ms
  // is out of ClaimRequest's range; kStoreUnavailable on I/O.
  virtual Result<WorkerLease> Renew(int worker_id, std::string_view instance, int64_t ttl_ms,
                                    int64_t time_bound_ms) = 0;

  // Ends the lease (expires_ms = 0) and sets time_bound_ms to `time_bound_ms`
  // (the exact last issued timestamp; may lower the bound), keeping owner
  // and instance so the same owner prefers the id next time. No-op success
  // if the row's instance differs (or there is no row). kInvalidArgument if
  // worker_id < 0 or instance is not 1..64 bytes; kStoreUnavailable on I/O.
  virtual Status Release(int worker_id, std::string_view instance, int64_t time_bound_ms) = 0;

  // Every row, by worker id (for the admin view and tests).
  virtual Result<std::vector<WorkerLease>> List() = 0;
};

}  // namespace seqd
