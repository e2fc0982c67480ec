#include "storage/sqlite/sqlite_worker_lease_store.h"

#include <sqlite3.h>

#include <limits>

#include "storage/worker_lease_store_factory.h"

namespace seqd {
namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS seqd_worker_lease ("
    "worker_id INT NOT NULL PRIMARY KEY, "
    "owner VARCHAR(255) NOT NULL, "
    "instance VARCHAR(64) NOT NULL, "
    "expires_ms BIGINT NOT NULL, "
    "time_bound_ms BIGINT NOT NULL DEFAULT 0, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)";

// The store clock: 'now' in unix millis (julianday has sub-ms precision).
#define SEQD_SQLITE_NOW_MS "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
// Same text format as CURRENT_TIMESTAMP, with milliseconds, in UTC.
#define SEQD_SQLITE_NOW "strftime('%Y-%m-%d %H:%M:%f', 'now')"
#define SEQD_LEASE_COLUMNS "worker_id, owner, instance, expires_ms, time_bound_ms"

enum StmtId {
  kNow,
  kRows,
  kSelectOne,
  kInsert,
  kTake,
  kRenew,
  kRelease,
  kNumStmts,
};

const char* const kSql[kNumStmts] = {
    /* kNow */ "SELECT " SEQD_SQLITE_NOW_MS,
    /* kRows */
    "SELECT " SEQD_LEASE_COLUMNS " FROM seqd_worker_lease WHERE worker_id < ?1 ORDER BY worker_id",
    /* kSelectOne */ "SELECT " SEQD_LEASE_COLUMNS " FROM seqd_worker_lease WHERE worker_id = ?1",
    /* kInsert */
    "INSERT INTO seqd_worker_lease "
    "(worker_id, owner, instance, expires_ms, time_bound_ms, update_time) "
    "VALUES (?1, ?2, ?3, ?4, 0, " SEQD_SQLITE_NOW ")",
    /* kTake */
    "UPDATE seqd_worker_lease SET owner = ?1, instance = ?2, expires_ms = ?3, "
    "update_time = " SEQD_SQLITE_NOW " WHERE worker_id = ?4",
    /* kRenew */
    "UPDATE seqd_worker_lease SET expires_ms = ?1, time_bound_ms = MAX(time_bound_ms, ?2), "
    "update_time = " SEQD_SQLITE_NOW " WHERE worker_id = ?3 AND instance = ?4",
    /* kRelease */
    "UPDATE seqd_worker_lease SET expires_ms = 0, time_bound_ms = ?1, "
    "update_time = " SEQD_SQLITE_NOW " WHERE worker_id = ?2 AND instance = ?3",
};

WorkerLease ReadLease(sqlite3_stmt* s) {
  WorkerLease l;
  l.worker_id = sqlite3_column_int(s, 0);
  l.owner = SqliteColumnText(s, 1);
  l.instance = SqliteColumnText(s, 2);
  l.expires_ms = sqlite3_column_int64(s, 3);
  l.time_bound_ms = sqlite3_column_int64(s, 4);
  return l;
}

}  // namespace

SqliteWorkerLeaseStore::SqliteWorkerLeaseStore(std::string path)
    : SqliteStoreBase(std::move(path), kSql, kCreateTable, "create table") {}

Result<int64_t> SqliteWorkerLeaseStore::NowLocked(const char* op) {
  Result<std::optional<int64_t>> now = db_.QueryInt64(kNow, op);
  if (!now.ok()) return now.error();
  if (!*now) return MakeError(ErrorCode::kInternal, std::string("sqlite ") + op + ": no clock row");
  return **now;
}

Result<std::vector<WorkerLease>> SqliteWorkerLeaseStore::RowsLocked(int64_t below, const char* op) {
  return db_.QueryRows(kRows, op, ReadLease, below);
}

Result<WorkerLease> SqliteWorkerLeaseStore::Claim(const ClaimRequest& r) {
  Status st = worker_lease::CheckClaim(r);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "claim");
  if (st = txn.Begin(); !st.ok()) return st.error();
  auto now = NowLocked("claim (now)");
  if (!now.ok()) return now.error();
  auto rows = RowsLocked(r.max_workers, "claim (select)");
  if (!rows.ok()) return rows.error();
  const worker_lease::ClaimChoice choice = worker_lease::ChooseWorkerId(*rows, r, *now);
  if (choice.kind == worker_lease::ClaimChoice::kNone) {
    return worker_lease::AllLeased(r.max_workers);
  }
  const WorkerLease out = worker_lease::ClaimedLease(r, choice, *rows, *now);
  if (choice.kind == worker_lease::ClaimChoice::kInsert) {
    st =
        db_.Exec(kInsert, "claim (insert)", out.worker_id, out.owner, out.instance, out.expires_ms);
    if (!st.ok()) return st.error();
  } else {
    st = db_.Exec(kTake, "claim (update)", out.owner, out.instance, out.expires_ms, out.worker_id);
    if (!st.ok()) return st.error();
    if (db_.Changes() != 1) {
      return MakeError(ErrorCode::kInternal, "sqlite claim (update): row vanished");
    }
  }
  if (st = txn.Commit(); !st.ok()) return st.error();
  return out;
}

Result<WorkerLease> SqliteWorkerLeaseStore::Renew(int worker_id, std::string_view instance,
                                                  int64_t ttl_ms, int64_t time_bound_ms) {
  Status st = worker_lease::CheckRenew(worker_id, instance, ttl_ms);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "renew");
  if (st = txn.Begin(); !st.ok()) return st.error();
  auto now = NowLocked("renew (now)");
  if (!now.ok()) return now.error();
  st = db_.Exec(kRenew, "renew (update)", *now + ttl_ms, time_bound_ms, worker_id, instance);
  if (!st.ok()) return st.error();
  if (db_.Changes() == 0) return worker_lease::NotLeased(worker_id);
  Result<std::optional<WorkerLease>> out =
      db_.QueryRow(kSelectOne, "renew (select)", ReadLease, worker_id);
  if (!out.ok()) return out.error();
  if (!*out) return MakeError(ErrorCode::kInternal, "sqlite renew (select): row vanished");
  (*out)->store_now_ms = *now;
  if (st = txn.Commit(); !st.ok()) return st.error();
  return **out;
}

Status SqliteWorkerLeaseStore::Release(int worker_id, std::string_view instance,
                                       int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("release", worker_id, instance);
  if (!st.ok()) return st;
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "release");
  if (st = txn.Begin(); !st.ok()) return st;
  st = db_.Exec(kRelease, "release (update)", time_bound_ms, worker_id, instance);
  if (!st.ok()) return st;
  return txn.Commit();
}

Result<std::vector<WorkerLease>> SqliteWorkerLeaseStore::List() {
  MutexLock lock(mu_);
  auto now = NowLocked("list (now)");
  if (!now.ok()) return now.error();
  auto rows = RowsLocked(std::numeric_limits<int64_t>::max(), "list");
  if (!rows.ok()) return rows;
  for (WorkerLease& l : *rows) l.store_now_ms = *now;
  return rows;
}

}  // namespace seqd
