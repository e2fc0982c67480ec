#include "storage/mysql/mysql_shard_lease_store.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "storage/mysql/mysql_errors.h"

namespace seqd {
namespace {

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS seqd_cluster ("
    "name VARCHAR(64) NOT NULL PRIMARY KEY, value BIGINT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS seqd_shard_lease ("
    "shard INT NOT NULL PRIMARY KEY, "
    "owner VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', "
    "epoch BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, "
    "fences BIGINT NOT NULL DEFAULT 0, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP"
    ") ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS seqd_cluster_member ("
    "instance VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, "
    "advertise VARCHAR(255) NOT NULL, heartbeat BIGINT NOT NULL DEFAULT 0, "
    "`left` TINYINT NOT NULL DEFAULT 0, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP"
    ") ENGINE=InnoDB",
};

enum StmtId {
  kFixShards,
  kReadShards,
  kCountRows,
  kReadLeases,
  kReadOne,
  kAcquire,
  kRenew,
  kRelease,
  kRenewAll,
  kReadOwned,
  kBeat,
  kLeave,
  kMembers,
  kForget,
  kHasSealed,
  kSeal,
  kReadSealed,
  kOpen,
  kReadForSeal,
  kNumStmts,
};

const char* const kSql[kNumStmts] = {
    /* kFixShards */ "INSERT IGNORE INTO seqd_cluster (name, value) VALUES ('shards', ?)",
    /* kReadShards */ "SELECT value FROM seqd_cluster WHERE name = 'shards'",
    /* kCountRows */ "SELECT COUNT(*) FROM seqd_shard_lease",
    /* kReadLeases */ "SELECT shard, owner, epoch, version FROM seqd_shard_lease ORDER BY shard",
    /* kReadOne */ "SELECT shard, owner, epoch, version FROM seqd_shard_lease WHERE shard = ?",
    /* kAcquire */
    "UPDATE seqd_shard_lease SET owner = ?, epoch = epoch + 1, version = version + 1 "
    "WHERE shard = ? AND version = ? AND sealed = 0",
    /* kRenew */
    "UPDATE seqd_shard_lease SET version = version + 1 "
    "WHERE shard = ? AND owner = ? AND owner <> '' AND epoch = ?",
    /* kRelease */
    "UPDATE seqd_shard_lease SET owner = '', version = version + 1 "
    "WHERE shard = ? AND owner = ? AND owner <> '' AND epoch = ?",
    /* kRenewAll */ "UPDATE seqd_shard_lease SET version = version + 1 WHERE owner = ?",
    /* kReadOwned */
    "SELECT shard, owner, epoch, version FROM seqd_shard_lease WHERE owner = ? ORDER BY shard",
    /* kBeat */
    "INSERT INTO seqd_cluster_member (instance, advertise, heartbeat, `left`) VALUES (?, ?, 1, 0) "
    "ON DUPLICATE KEY UPDATE advertise = VALUES(advertise), heartbeat = heartbeat + 1, `left` = 0",
    /* kLeave */
    "UPDATE seqd_cluster_member SET `left` = 1, heartbeat = heartbeat + 1 WHERE instance = ?",
    /* kMembers */
    "SELECT instance, advertise, heartbeat, `left`, "
    "TIMESTAMPDIFF(SECOND, update_time, CURRENT_TIMESTAMP) FROM seqd_cluster_member "
    "ORDER BY instance",
    /* kForget */ "DELETE FROM seqd_cluster_member WHERE instance = ? AND heartbeat = ?",
    /* kHasSealed */
    "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
    "AND TABLE_NAME = 'seqd_shard_lease' AND COLUMN_NAME = 'sealed'",
    /* kSeal */
    "UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 1, version = version + 1, "
    "sealed = 1 WHERE shard = ? AND sealed = 0",
    /* kReadSealed */ "SELECT epoch, sealed FROM seqd_shard_lease WHERE shard = ?",
    /* kOpen */
    "INSERT INTO seqd_shard_lease (shard, owner, epoch, version, sealed) VALUES (?, '', ?, 1, 0) "
    "ON DUPLICATE KEY UPDATE owner = '', epoch = GREATEST(epoch + 1, VALUES(epoch)), "
    "version = version + 1, sealed = 0",
    /* kReadForSeal */ "SELECT owner, sealed FROM seqd_shard_lease WHERE shard = ? FOR UPDATE",
};

const MysqlSession kSession{kSql, nullptr, std::nullopt};

ShardLeaseRow ReadRow(sql::ResultSet& rs) {
  ShardLeaseRow r;
  r.shard = static_cast<uint32_t>(rs.getInt(1));
  r.owner = rs.getString(2).asStdString();
  r.epoch = rs.getInt64(3);
  r.version = rs.getInt64(4);
  return r;
}

ClusterMember ReadMember(sql::ResultSet& rs) {
  return ClusterMember{rs.getString(1).asStdString(), rs.getString(2).asStdString(), rs.getInt64(3),
                       rs.getInt(4) != 0, std::max<int64_t>(0, rs.getInt64(5)) * 1000};
}

// The rows `owner` holds, by shard, in the open transaction. REQUIRES:
// inside Run.
std::vector<ShardLeaseRow> ReadOwned(MysqlConn& c, std::string_view owner) {
  return c.QueryRows(kReadOwned, ReadRow, owner);
}

// Reads one row and commits. REQUIRES: inside Run.
Result<ShardLeaseRow> ReadOne(MysqlConn& c, uint32_t shard) {
  std::optional<ShardLeaseRow> row = c.QueryRow(kReadOne, ReadRow, static_cast<int>(shard));
  if (!row) return MakeError(ErrorCode::kInvalidArgument, "no shard " + std::to_string(shard));
  c.Commit();
  return *row;
}

// A shard's epoch and whether its row is sealed; nullopt for no such
// shard. REQUIRES: inside Run.
std::optional<std::pair<int64_t, bool>> ReadSeal(MysqlConn& c, uint32_t shard) {
  return c.QueryRow(
      kReadSealed,
      [](sql::ResultSet& rs) {
        return std::pair<int64_t, bool>(rs.getInt64(1), rs.getInt(2) != 0);
      },
      static_cast<int>(shard));
}

// kStoreUnavailable: the seal's transaction was rolled back (retryable).
Error SealRolledBack(uint32_t shard) {
  return MakeError(ErrorCode::kStoreUnavailable,
                   "the seal of shard " + std::to_string(shard) +
                       " was rolled back by a conflicting commit; retry");
}

}  // namespace

Result<uint32_t> MysqlShardLeaseStore::EnsureSchema(uint32_t shards) {
  if (Status s = shard_lease::CheckShards(shards); !s) return s.error();
  return pool_->Run<uint32_t>(kSession, "cluster schema", [&](MysqlConn& c) -> Result<uint32_t> {
    for (const char* ddl : kSchema) c.Plain().execute(ddl);
    c.Commit();
    // Store groups' moves seal a shard's row in the group it leaves: a
    // sealed row is never taken (Acquire) nor fenced (its owner is "").
    if (c.QueryInt64(kHasSealed).value_or(0) == 0) {
      try {
        c.Plain().execute(
            "ALTER TABLE seqd_shard_lease ADD COLUMN sealed TINYINT NOT NULL DEFAULT 0");
      } catch (const sql::SQLException& e) {
        // Another instance added it meanwhile.
        if (e.getErrorCode() != kMysqlErrDupFieldName) throw;
      }
    }
    c.Commit();
    c.Execute(kFixShards, int64_t{shards});
    c.Commit();
    const std::optional<int64_t> fixed = c.QueryInt64(kReadShards);
    if (!fixed) return MakeError(ErrorCode::kInternal, "cluster shard count missing");
    const int64_t have = c.QueryInt64(kCountRows).value_or(0);
    c.Commit();
    // Rows for every shard, in chunks of INSERT IGNORE (idempotent; several
    // instances may run this at once).
    constexpr int64_t kChunk = 512;
    for (int64_t from = 0; have < *fixed && from < *fixed; from += kChunk) {
      std::string sql = "INSERT IGNORE INTO seqd_shard_lease (shard) VALUES ";
      const int64_t to = std::min(*fixed, from + kChunk);
      for (int64_t i = from; i < to; ++i) {
        if (i > from) sql += ',';
        sql += '(' + std::to_string(i) + ')';
      }
      c.Update(sql);
      c.Commit();
    }
    return static_cast<uint32_t>(*fixed);
  });
}

Result<std::vector<ShardLeaseRow>> MysqlShardLeaseStore::ReadLeases() {
  return pool_->QueryRows(kSession, "read leases", kReadLeases, ReadRow);
}

Result<ShardLeaseRow> MysqlShardLeaseStore::Acquire(uint32_t shard, int64_t expected_version,
                                                    std::string_view owner) {
  if (Status s = shard_lease::CheckInstance(owner); !s) return s.error();
  return pool_->Run<ShardLeaseRow>(kSession, "acquire", [&](MysqlConn& c) -> Result<ShardLeaseRow> {
    const int updated = c.Execute(kAcquire, owner, static_cast<int>(shard), expected_version);
    auto row = ReadOne(c, shard);
    if (!row) return row;
    // A re-run after a lost COMMIT finds the row at expected + 1 with us as
    // owner: our own earlier run took it.
    if (updated == 1 || (row->owner == owner && row->version == expected_version + 1)) return row;
    return shard_lease::VersionMoved(shard, expected_version);
  });
}

Result<ShardLeaseRow> MysqlShardLeaseStore::Renew(uint32_t shard, std::string_view owner,
                                                  int64_t epoch) {
  return pool_->Run<ShardLeaseRow>(kSession, "renew", [&](MysqlConn& c) -> Result<ShardLeaseRow> {
    const int updated = c.Execute(kRenew, static_cast<int>(shard), owner, epoch);
    auto row = ReadOne(c, shard);
    if (!row) return row;
    if (updated == 1) return row;
    return shard_lease::NotHeld(shard);
  });
}

Result<std::vector<ShardLeaseRow>> MysqlShardLeaseStore::RenewAll(std::string_view owner) {
  if (Status s = shard_lease::CheckInstance(owner); !s) return s.error();
  // Idempotent: a re-run after a lost COMMIT renews the same rows again.
  return pool_->Run<std::vector<ShardLeaseRow>>(
      kSession, "renew all", [&](MysqlConn& c) -> Result<std::vector<ShardLeaseRow>> {
        c.Execute(kRenewAll, owner);
        std::vector<ShardLeaseRow> out = ReadOwned(c, owner);
        c.Commit();
        return out;
      });
}

Status MysqlShardLeaseStore::Release(uint32_t shard, std::string_view owner, int64_t epoch) {
  return pool_->Execute(kSession, "release", kRelease, static_cast<int>(shard), owner, epoch);
}

Status MysqlShardLeaseStore::ReleaseMany(std::string_view owner,
                                         const std::vector<ShardLeaseRow>& held) {
  if (held.empty()) return OkStatus();
  // Idempotent: a re-run after a lost COMMIT finds the rows already free.
  return pool_->Run<Ok>(kSession, "release many", [&](MysqlConn& c) -> Result<Ok> {
    for (const ShardLeaseRow& row : held) {
      c.Execute(kRelease, static_cast<int>(row.shard), owner, row.epoch);
    }
    c.Commit();
    return Ok{};
  });
}

Result<std::vector<ShardLeaseRow>> MysqlShardLeaseStore::AcquireMany(
    std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted) {
  if (Status s = shard_lease::CheckInstance(owner); !s) return s.error();
  if (wanted.empty()) return std::vector<ShardLeaseRow>();
  return pool_->Run<std::vector<ShardLeaseRow>>(
      kSession, "acquire many", [&](MysqlConn& c) -> Result<std::vector<ShardLeaseRow>> {
        for (const auto& [shard, version] : wanted) {
          try {
            c.Execute(kAcquire, owner, static_cast<int>(shard), version);
          } catch (const sql::SQLException& e) {
            // A row locked by another transaction (an owner frozen mid
            // commit): only this statement is rolled back; take the rest.
            if (e.getErrorCode() != kMysqlErrLockWaitTimeout) throw;
          }
        }
        // Ours at expected + 1: taken now, or by our own earlier run whose
        // COMMIT was lost.
        const std::vector<ShardLeaseRow> owned = ReadOwned(c, owner);
        c.Commit();
        std::vector<ShardLeaseRow> taken;
        for (const auto& [shard, version] : wanted) {
          auto it =
              std::lower_bound(owned.begin(), owned.end(), shard,
                               [](const ShardLeaseRow& row, uint32_t s) { return row.shard < s; });
          if (it != owned.end() && it->shard == shard && it->version == version + 1) {
            taken.push_back(*it);
          }
        }
        return taken;
      });
}

Result<ShardLeaseStore::Sealed> MysqlShardLeaseStore::Seal(uint32_t shard) {
  auto sealed = pool_->Run<Sealed>(kSession, "seal shard", [&](MysqlConn& c) -> Result<Sealed> {
    // Locked until COMMIT: the owner read is the one the seal replaces.
    auto before = c.QueryRow(
        kReadForSeal,
        [](sql::ResultSet& rs) {
          return std::pair<std::string, bool>(rs.getString(1).asStdString(), rs.getInt(2) != 0);
        },
        static_cast<int>(shard));
    if (!before) {
      return MakeError(ErrorCode::kInvalidArgument, "no shard " + std::to_string(shard));
    }
    c.Execute(kSeal, static_cast<int>(shard));
    auto row = ReadSeal(c, shard);
    // A Galera node may roll the transaction back for a conflicting
    // commit of another node without failing the next statement, which
    // then runs in a new transaction: the row must read sealed here.
    if (!row || !row->second) return SealRolledBack(shard);
    c.Commit();
    // A re-run after a lost COMMIT finds the row sealed: may_serve, as for
    // any row sealed before (waiting is always safe).
    return Sealed{row->first, before->second || !before->first.empty()};
  });
  if (!sealed) return sealed;
  // The same roll-back after the read would leave COMMIT nothing to commit,
  // and succeed: the seal counts once a new transaction reads it.
  auto now = SealedEpoch(shard);
  if (!now) return now.error();
  if (*now < 0) return SealRolledBack(shard);
  return sealed;
}

Result<int64_t> MysqlShardLeaseStore::SealedEpoch(uint32_t shard) {
  return pool_->Run<int64_t>(kSession, "read seal", [&](MysqlConn& c) -> Result<int64_t> {
    auto row = ReadSeal(c, shard);
    c.Commit();
    if (!row || !row->second) return int64_t{-1};
    return row->first;
  });
}

Status MysqlShardLeaseStore::Open(uint32_t shard, int64_t min_epoch) {
  return pool_->Execute(kSession, "open shard", kOpen, static_cast<int>(shard), min_epoch);
}

Status MysqlShardLeaseStore::Heartbeat(std::string_view instance, std::string_view advertise) {
  if (Status s = shard_lease::CheckInstance(instance); !s) return s;
  return pool_->Execute(kSession, "heartbeat", kBeat, instance, advertise);
}

Status MysqlShardLeaseStore::Leave(std::string_view instance) {
  return pool_->Execute(kSession, "leave", kLeave, instance);
}

Status MysqlShardLeaseStore::Forget(std::string_view instance, int64_t heartbeat) {
  return pool_->Execute(kSession, "forget member", kForget, instance, heartbeat);
}

Result<std::vector<ClusterMember>> MysqlShardLeaseStore::ReadMembers() {
  return pool_->QueryRows(kSession, "members", kMembers, ReadMember);
}

}  // namespace seqd
