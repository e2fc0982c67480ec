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

}  // namespace

MysqlWorkerLeaseStore::MysqlWorkerLeaseStore(MysqlOptions options)
    : pool_(std::make_shared<MysqlPool>(std::move(options))) {}

MysqlWorkerLeaseStore::MysqlWorkerLeaseStore(std::shared_ptr<MysqlPool> pool)
    : pool_(std::move(pool)) {}

MysqlWorkerLeaseStore::~MysqlWorkerLeaseStore() = default;

std::string MysqlWorkerLeaseStore::Describe() const { return DescribeMysql(pool_->options()); }

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
      int64_t now = 0;
      {
        std::unique_ptr<sql::ResultSet> rs(c.Stmt(kNow).executeQuery());
        if (!rs->next()) return MakeError(ErrorCode::kInternal, "mysql claim: no clock row");
        now = rs->getInt64(1);
      }
      std::vector<WorkerLease> rows;
      {
        sql::PreparedStatement& s = c.Stmt(kRows);
        s.setInt(1, r.max_workers);
        std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
        while (rs->next()) rows.push_back(ReadLease(*rs));
      }
      const worker_lease::ClaimChoice choice = worker_lease::ChooseWorkerId(rows, r, now);
      if (choice.kind == worker_lease::ClaimChoice::kNone) {
        c.Commit();
        return worker_lease::AllLeased(r.max_workers);
      }

      WorkerLease out;
      out.worker_id = choice.worker_id;
      out.owner = r.owner;
      out.instance = r.instance;
      out.expires_ms = now + r.ttl_ms;
      out.store_now_ms = now;
      bool won = false;
      try {
        if (choice.kind == worker_lease::ClaimChoice::kInsert) {
          sql::PreparedStatement& s = c.Stmt(kInsert);
          s.setInt(1, out.worker_id);
          s.setString(2, out.owner);
          s.setString(3, out.instance);
          s.setInt64(4, out.expires_ms);
          s.executeUpdate();
          won = true;
        } else {
          const WorkerLease& old = rows[choice.row];
          out.time_bound_ms = old.time_bound_ms;
          out.reclaimed = old.instance == r.instance;
          if (out.reclaimed) {
            sql::PreparedStatement& s = c.Stmt(kReclaim);
            s.setString(1, out.owner);
            s.setInt64(2, out.expires_ms);
            s.setInt(3, out.worker_id);
            s.setString(4, old.instance);
            s.setInt64(5, old.time_bound_ms);
            won = s.executeUpdate() == 1;
          } else {
            sql::PreparedStatement& s = c.Stmt(kTakeOver);
            s.setString(1, out.owner);
            s.setString(2, out.instance);
            s.setInt64(3, out.expires_ms);
            s.setInt(4, out.worker_id);
            s.setString(5, old.instance);
            s.setInt64(6, old.time_bound_ms);
            won = s.executeUpdate() == 1;  // rows matched (CLIENT_FOUND_ROWS)
          }
        }
      } catch (const sql::SQLException& e) {
        // Another process inserted the id first, or InnoDB chose this
        // transaction as a deadlock victim: both are lost races.
        if (e.getErrorCode() != kMysqlErrDupKey && e.getErrorCode() != kMysqlErrDeadlock) throw;
      }
      if (won) {
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
  Status st = worker_lease::CheckHolder("renew", worker_id, instance);
  if (st.ok()) st = worker_lease::CheckTtl("renew", ttl_ms);
  if (!st.ok()) return st.error();
  const std::string inst(instance);
  // Idempotent: a retry after a lost COMMIT extends from a later store-now
  // and raises the bound to the same value.
  return pool_->Run<WorkerLease>(kSession, "renew", [&](MysqlConn& c) -> Result<WorkerLease> {
    {
      sql::PreparedStatement& s = c.Stmt(kRenew);
      s.setInt64(1, ttl_ms);
      s.setInt64(2, time_bound_ms);
      s.setInt(3, worker_id);
      s.setString(4, inst);
      if (s.executeUpdate() == 0) return worker_lease::NotLeased(worker_id);
    }
    WorkerLease out;
    {
      sql::PreparedStatement& s = c.Stmt(kSelectOne);
      s.setInt(1, worker_id);
      std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
      if (!rs->next()) return MakeError(ErrorCode::kInternal, "mysql renew: row vanished");
      out = ReadLease(*rs);
    }
    out.store_now_ms = out.expires_ms - ttl_ms;  // the UPDATE's store-now
    c.Commit();
    return out;
  });
}

Status MysqlWorkerLeaseStore::Release(int worker_id, std::string_view instance,
                                      int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("release", worker_id, instance);
  if (!st.ok()) return st;
  const std::string inst(instance);
  return pool_->Run<Ok>(kSession, "release", [&](MysqlConn& c) -> Result<Ok> {
    sql::PreparedStatement& s = c.Stmt(kRelease);
    s.setInt64(1, time_bound_ms);
    s.setInt(2, worker_id);
    s.setString(3, inst);
    s.executeUpdate();  // no row matched: not ours, nothing to do
    c.Commit();
    return Ok{};
  });
}

Result<std::vector<WorkerLease>> MysqlWorkerLeaseStore::List() {
  return pool_->Run<std::vector<WorkerLease>>(
      kSession, "list", [&](MysqlConn& c) -> Result<std::vector<WorkerLease>> {
        std::unique_ptr<sql::ResultSet> rs(c.Stmt(kList).executeQuery());
        std::vector<WorkerLease> out;
        while (rs->next()) {
          out.push_back(ReadLease(*rs));
          out.back().store_now_ms = rs->getInt64(6);
        }
        rs.reset();
        c.Commit();
        return out;
      });
}

}  // namespace seqd
