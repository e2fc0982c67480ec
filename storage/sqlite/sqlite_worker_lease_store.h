// WorkerLeaseStore on a local SQLite file (normally the file the SqliteStore
// uses; the table seqd_worker_lease does not overlap with the others).
//
// Store clock: SQLite's 'now' (the host's clock) in unix millis.
//
// Durability: WAL journal with synchronous=FULL, so a lease that Claim()
// returned survives kill -9 and power loss.
//
// Sharing: several instances, in one process or in several, may open the
// same file. Claim, Renew and Release each run in one BEGIN IMMEDIATE
// transaction (the write lock is taken before the rows are read), waiting up
// to 5 s (busy_timeout) for a competing writer, so claimers are serialized
// and never share an id.
//
// Thread safety: all methods are safe to call concurrently; they serialize on
// one sqlite3 connection per instance. Calls block on disk I/O.
#pragma once

#include <memory>
#include <string>

#include "common/mutex.h"
#include "storage/sqlite/sqlite_db.h"
#include "storage/sqlite/sqlite_store_base.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class SqliteWorkerLeaseStore final
    : public SqliteStoreBase<WorkerLeaseStore, SqliteWorkerLeaseStore> {
 public:
  // Does not touch the file (SqliteStoreBase; Open opens it now).
  explicit SqliteWorkerLeaseStore(std::string path);

  Result<WorkerLease> Claim(const ClaimRequest& r) override;
  Result<WorkerLease> Renew(int worker_id, std::string_view instance, int64_t ttl_ms,
                            int64_t time_bound_ms) override;
  Status Release(int worker_id, std::string_view instance, int64_t time_bound_ms) override;
  Result<std::vector<WorkerLease>> List() override;

 private:
  // The store clock, unix millis.
  Result<int64_t> NowLocked(const char* op) REQUIRES(mu_);
  // Rows with worker_id < `below`, by worker id; store_now_ms is left 0.
  Result<std::vector<WorkerLease>> RowsLocked(int64_t below, const char* op) REQUIRES(mu_);
};

}  // namespace seqd
