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

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  if (p == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

WorkerLease ReadLease(sqlite3_stmt* s) {
  WorkerLease l;
  l.worker_id = sqlite3_column_int(s, 0);
  l.owner = ColumnText(s, 1);
  l.instance = ColumnText(s, 2);
  l.expires_ms = sqlite3_column_int64(s, 3);
  l.time_bound_ms = sqlite3_column_int64(s, 4);
  return l;
}

}  // namespace

SqliteWorkerLeaseStore::SqliteWorkerLeaseStore(std::string path)
    : path_(path), db_(std::move(path), kSql) {}

SqliteWorkerLeaseStore::~SqliteWorkerLeaseStore() = default;

Result<std::unique_ptr<SqliteWorkerLeaseStore>> SqliteWorkerLeaseStore::Open(
    const std::string& path) {
  auto store = std::make_unique<SqliteWorkerLeaseStore>(path);
  {
    MutexLock lock(store->mu_);
    Status st = store->db_.Open();
    if (!st.ok()) return st.error();
  }
  return store;
}

Status SqliteWorkerLeaseStore::EnsureSchema() {
  MutexLock lock(mu_);
  return db_.ExecScript(kCreateTable, "create table");
}

Result<int64_t> SqliteWorkerLeaseStore::NowLocked(const char* op) {
  auto s = db_.Stmt(kNow, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Result<std::vector<WorkerLease>> SqliteWorkerLeaseStore::RowsLocked(int64_t below, const char* op) {
  auto s = db_.Stmt(kRows, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  sqlite3_bind_int64(*s, 1, below);
  std::vector<WorkerLease> out;
  for (;;) {
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
    out.push_back(ReadLease(*s));
  }
  return out;
}

Result<WorkerLease> SqliteWorkerLeaseStore::Claim(const ClaimRequest& r) {
  Status st = worker_lease::CheckClaim(r);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  st = db_.Begin("claim (begin)");
  if (!st.ok()) return st.error();
  auto fail = [&](Error e) REQUIRES(mu_) -> Error {
    db_.Rollback();
    return e;
  };

  auto now = NowLocked("claim (now)");
  if (!now.ok()) return fail(now.error());
  auto rows = RowsLocked(r.max_workers, "claim (select)");
  if (!rows.ok()) return fail(rows.error());
  const worker_lease::ClaimChoice choice = worker_lease::ChooseWorkerId(*rows, r, *now);
  if (choice.kind == worker_lease::ClaimChoice::kNone) {
    return fail(worker_lease::AllLeased(r.max_workers));
  }

  const WorkerLease out = worker_lease::ClaimedLease(r, choice, *rows, *now);
  if (choice.kind == worker_lease::ClaimChoice::kInsert) {
    auto s = db_.Stmt(kInsert, "claim (insert)");
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    sqlite3_bind_int(*s, 1, out.worker_id);
    SqliteBindText(*s, 2, out.owner);
    SqliteBindText(*s, 3, out.instance);
    sqlite3_bind_int64(*s, 4, out.expires_ms);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return fail(db_.SqlError(rc, "claim (insert)"));
  } else {
    auto s = db_.Stmt(kTake, "claim (update)");
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    SqliteBindText(*s, 1, out.owner);
    SqliteBindText(*s, 2, out.instance);
    sqlite3_bind_int64(*s, 3, out.expires_ms);
    sqlite3_bind_int(*s, 4, out.worker_id);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return fail(db_.SqlError(rc, "claim (update)"));
    if (db_.Changes() != 1) {
      return fail(MakeError(ErrorCode::kInternal, "sqlite claim (update): row vanished"));
    }
  }

  st = db_.Commit("claim (commit)");
  if (!st.ok()) return fail(st.error());
  return out;
}

Result<WorkerLease> SqliteWorkerLeaseStore::Renew(int worker_id, std::string_view instance,
                                                  int64_t ttl_ms, int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("renew", worker_id, instance);
  if (st.ok()) st = worker_lease::CheckTtl("renew", ttl_ms);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  st = db_.Begin("renew (begin)");
  if (!st.ok()) return st.error();
  auto fail = [&](Error e) REQUIRES(mu_) -> Error {
    db_.Rollback();
    return e;
  };

  auto now = NowLocked("renew (now)");
  if (!now.ok()) return fail(now.error());
  {
    auto s = db_.Stmt(kRenew, "renew (update)");
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    sqlite3_bind_int64(*s, 1, *now + ttl_ms);
    sqlite3_bind_int64(*s, 2, time_bound_ms);
    sqlite3_bind_int(*s, 3, worker_id);
    SqliteBindText(*s, 4, instance);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return fail(db_.SqlError(rc, "renew (update)"));
    if (db_.Changes() == 0) return fail(worker_lease::NotLeased(worker_id));
  }
  WorkerLease out;
  {
    auto s = db_.Stmt(kSelectOne, "renew (select)");
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    sqlite3_bind_int(*s, 1, worker_id);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_ROW) {
      if (rc == SQLITE_DONE) {
        return fail(MakeError(ErrorCode::kInternal, "sqlite renew (select): row vanished"));
      }
      return fail(db_.SqlError(rc, "renew (select)"));
    }
    out = ReadLease(*s);
  }
  out.store_now_ms = *now;

  st = db_.Commit("renew (commit)");
  if (!st.ok()) return fail(st.error());
  return out;
}

Status SqliteWorkerLeaseStore::Release(int worker_id, std::string_view instance,
                                       int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("release", worker_id, instance);
  if (!st.ok()) return st;
  MutexLock lock(mu_);
  st = db_.Begin("release (begin)");
  if (!st.ok()) return st;
  {
    auto s = db_.Stmt(kRelease, "release (update)");
    if (!s.ok()) {
      db_.Rollback();
      return s.error();
    }
    SqliteResetOnExit reset(*s);
    sqlite3_bind_int64(*s, 1, time_bound_ms);
    sqlite3_bind_int(*s, 2, worker_id);
    SqliteBindText(*s, 3, instance);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) {
      Error e = db_.SqlError(rc, "release (update)");
      db_.Rollback();
      return e;
    }
  }
  st = db_.Commit("release (commit)");
  if (!st.ok()) db_.Rollback();
  return st;
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
