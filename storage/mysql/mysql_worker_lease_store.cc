#include "storage/mysql/mysql_worker_lease_store.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <utility>

#include "storage/mysql/mysql_errors.h"
#include "storage/worker_lease_store_factory.h"

namespace seqd {
namespace {

// Claim attempts (each one transaction) before giving up on a contended table.
constexpr int kMaxClaimAttempts = 20;

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS seqd_worker_lease ("
    "worker_id INT NOT NULL, "
    "owner VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
    "instance VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
    "expires_ms BIGINT NOT NULL, "
    "time_bound_ms BIGINT NOT NULL DEFAULT 0, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
    "PRIMARY KEY (worker_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

// The store clock in unix millis, exact: NOW(3) is the statement's start, and
// with the session time zone at +00:00 UNIX_TIMESTAMP converts no local time.
#define SEQD_MYSQL_NOW_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
#define SEQD_LEASE_COLUMNS "worker_id, owner, instance, expires_ms, time_bound_ms"
// utf8mb4_bin ignores trailing spaces (PAD SPACE); a holder's token must
// match byte for byte.
#define SEQD_SAME_INSTANCE "CAST(instance AS BINARY) = CAST(? AS BINARY)"

enum StmtId {
  kNow,
  kRows,
  kList,
  kSelectOne,
  kInsert,
  kReclaim,
  kTakeOver,
  kRenew,
  kRelease,
  kNumStmts,
};

const char* const kSql[kNumStmts] = {
    /* kNow */ "SELECT " SEQD_MYSQL_NOW_MS,
    /* kRows */
    "SELECT " SEQD_LEASE_COLUMNS " FROM seqd_worker_lease WHERE worker_id < ? ORDER BY worker_id",
    /* kList */
    "SELECT " SEQD_LEASE_COLUMNS ", " SEQD_MYSQL_NOW_MS
    " FROM seqd_worker_lease ORDER BY worker_id",
    /* kSelectOne */ "SELECT " SEQD_LEASE_COLUMNS " FROM seqd_worker_lease WHERE worker_id = ?",
    /* kInsert */
    "INSERT INTO seqd_worker_lease (" SEQD_LEASE_COLUMNS ") VALUES (?, ?, ?, ?, 0)",
    /* kReclaim: the row this instance holds, unchanged since read */
    "UPDATE seqd_worker_lease SET owner = ?, expires_ms = ?, update_time = CURRENT_TIMESTAMP "
    "WHERE worker_id = ? AND " SEQD_SAME_INSTANCE " AND time_bound_ms = ?",
    /* kTakeOver: an expired row, unchanged since read */
    "UPDATE seqd_worker_lease SET owner = ?, instance = ?, expires_ms = ?, "
    "update_time = CURRENT_TIMESTAMP WHERE worker_id = ? AND " SEQD_SAME_INSTANCE
    " AND time_bound_ms = ? AND expires_ms <= " SEQD_MYSQL_NOW_MS,
    /* kRenew */
    "UPDATE seqd_worker_lease SET expires_ms = " SEQD_MYSQL_NOW_MS
    " + ?, time_bound_ms = GREATEST(time_bound_ms, ?), update_time = CURRENT_TIMESTAMP "
    "WHERE worker_id = ? AND " SEQD_SAME_INSTANCE,
    /* kRelease */
    "UPDATE seqd_worker_lease SET expires_ms = 0, time_bound_ms = ?, "
    "update_time = CURRENT_TIMESTAMP WHERE worker_id = ? AND " SEQD_SAME_INSTANCE,
};

const MysqlSession kSession{kSql, nullptr, std::nullopt};

WorkerLease ReadLease(sql::ResultSet& rs) {
  WorkerLease l;
  l.worker_id = rs.getInt(1);
  l.owner = rs.getString(2).asStdString();
  l.instance = rs.getString(3).asStdString();
  l.expires_ms = rs.getInt64(4);
  l.time_bound_ms = rs.getInt64(5);
  return l;
}

// Claim's write of `out` (ClaimedLease): its id inserted, or the chosen row
// of `rows` taken over on the condition that it is still as read. False if
// another process won the id: it inserted the id first, changed the row,
// or InnoDB chose this transaction as a deadlock victim.
bool TryClaim(MysqlConn& c, const worker_lease::ClaimChoice& choice,
              const std::vector<WorkerLease>& rows, const WorkerLease& out) {
  try {
    if (choice.kind == worker_lease::ClaimChoice::kInsert) {
      c.Execute(kInsert, out.worker_id, out.owner, out.instance, out.expires_ms);
      return true;
    }
    const WorkerLease& old = rows[choice.row];
    if (out.reclaimed) {
      return c.Execute(kReclaim, out.owner, out.expires_ms, out.worker_id, old.instance,
                       old.time_bound_ms) == 1;
    }
    // Rows matched (CLIENT_FOUND_ROWS).
    return c.Execute(kTakeOver, out.owner, out.instance, out.expires_ms, out.worker_id,
                     old.instance, old.time_bound_ms) == 1;
  } catch (const sql::SQLException& e) {
    if (e.getErrorCode() != kMysqlErrDupKey && e.getErrorCode() != kMysqlErrDeadlock) throw;
    return false;
  }
}

}  // namespace

Status MysqlWorkerLeaseStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "create table", [](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::Statement> s(c.conn->createStatement());
    s->execute(kCreateTable);
    c.Commit();
    return Ok{};
  });
}

Result<WorkerLease> MysqlWorkerLeaseStore::Claim(const ClaimRequest& r) {
  Status st = worker_lease::CheckClaim(r);
  if (!st.ok()) return st.error();
  // A retry after a lost COMMIT is safe: if it did commit, preference 1
  // finds the row this instance now holds.
  return pool_->Run<WorkerLease>(kSession, "claim", [&](MysqlConn& c) -> Result<WorkerLease> {
    for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
      const std::optional<int64_t> now = c.QueryInt64(kNow);
      if (!now) return MakeError(ErrorCode::kInternal, "mysql claim: no clock row");
      const std::vector<WorkerLease> rows = c.QueryRows(kRows, ReadLease, r.max_workers);
      const worker_lease::ClaimChoice choice = worker_lease::ChooseWorkerId(rows, r, *now);
      if (choice.kind == worker_lease::ClaimChoice::kNone) {
        c.Commit();
        return worker_lease::AllLeased(r.max_workers);
      }
      const WorkerLease out = worker_lease::ClaimedLease(r, choice, rows, *now);
      if (TryClaim(c, choice, rows, out)) {
        c.Commit();
        return out;
      }
      c.Rollback();
    }
    return MakeError(ErrorCode::kStoreUnavailable, "mysql claim: lost the race for a worker id " +
                                                       std::to_string(kMaxClaimAttempts) +
                                                       " times");
  });
}

Result<WorkerLease> MysqlWorkerLeaseStore::Renew(int worker_id, std::string_view instance,
                                                 int64_t ttl_ms, int64_t time_bound_ms) {
  Status st = worker_lease::CheckRenew(worker_id, instance, ttl_ms);
  if (!st.ok()) return st.error();
  // Idempotent: a retry after a lost COMMIT extends from a later store-now
  // and raises the bound to the same value.
  return pool_->Run<WorkerLease>(kSession, "renew", [&](MysqlConn& c) -> Result<WorkerLease> {
    if (c.Execute(kRenew, ttl_ms, time_bound_ms, worker_id, instance) == 0) {
      return worker_lease::NotLeased(worker_id);
    }
    std::optional<WorkerLease> out = c.QueryRow(kSelectOne, ReadLease, worker_id);
    if (!out) return MakeError(ErrorCode::kInternal, "mysql renew: row vanished");
    out->store_now_ms = out->expires_ms - ttl_ms;  // the UPDATE's store-now
    c.Commit();
    return *out;
  });
}

Status MysqlWorkerLeaseStore::Release(int worker_id, std::string_view instance,
                                      int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("release", worker_id, instance);
  if (!st.ok()) return st;
  // No row matched: not ours, nothing to do.
  return pool_->Execute(kSession, "release", kRelease, time_bound_ms, worker_id, instance);
}

Result<std::vector<WorkerLease>> MysqlWorkerLeaseStore::List() {
  auto read = [](sql::ResultSet& rs) {
    WorkerLease l = ReadLease(rs);
    l.store_now_ms = rs.getInt64(6);
    return l;
  };
  return pool_->QueryRows(kSession, "list", kList, read);
}

}  // namespace seqd
