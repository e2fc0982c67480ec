// WorkerLeaseStore on MySQL/MariaDB (InnoDB) via Connector/C++.
//
// Table: seqd_worker_lease (see EnsureSchema in mysql_worker_lease_store.cc);
// owner and instance are utf8mb4_bin, and instance is compared as bytes
// (trailing spaces count). Sessions run READ COMMITTED with time_zone
// '+00:00'; the store clock is the server's NOW(3) in unix millis.
//
// Claim is optimistic, one transaction per attempt: read the store clock and
// the rows, pick an id by the contract's preference order, then either
// INSERT the free id (a duplicate key means another process won it) or
// UPDATE the chosen row on the condition that it is still as read (same
// instance and time bound, and, unless it is this instance's own row,
// expired by the server's clock then); no row matched means another process
// won it. A lost race, or a deadlock, is retried up to 20 times, then
// kStoreUnavailable.
//
// Retries after a lost connection (MysqlPool, once on a new connection) are
// allowed for every call, a COMMIT of unknown outcome included: Renew and
// Release are idempotent, and a repeated Claim returns the row this
// instance already holds (preference 1).
//
// Connections: a pool of at most `pool_size` connections, opened lazily (the
// constructor never connects); each keeps its prepared statements.
//
// Thread safety: all methods are safe to call concurrently. Calls block on
// network I/O.
#pragma once

#include <string>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class MysqlWorkerLeaseStore final : public MysqlStoreBase<WorkerLeaseStore> {
 public:
  // On its own pool (from MysqlOptions) or a shared one.
  using MysqlStoreBase::MysqlStoreBase;

  Status EnsureSchema() override;
  Result<WorkerLease> Claim(const ClaimRequest& r) override;
  Result<WorkerLease> Renew(int worker_id, std::string_view instance, int64_t ttl_ms,
                            int64_t time_bound_ms) override;
  Status Release(int worker_id, std::string_view instance, int64_t time_bound_ms) override;
  Result<std::vector<WorkerLease>> List() override;
};

}  // namespace seqd
