#include "storage/mysql/mysql_placement_store.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <optional>
#include <string>

namespace seqd {
namespace {

constexpr const char* kGroupSchema =
    "CREATE TABLE IF NOT EXISTS seqd_store_group ("
    "id TINYINT NOT NULL PRIMARY KEY, name VARCHAR(64) NOT NULL) ENGINE=InnoDB";

constexpr const char* kPlacementSchema[] = {
    "CREATE TABLE IF NOT EXISTS seqd_placement ("
    "id TINYINT NOT NULL PRIMARY KEY, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
    "INSERT IGNORE INTO seqd_placement (id, version) VALUES (1, 0)",
    "CREATE TABLE IF NOT EXISTS seqd_shard_placement ("
    "shard INT NOT NULL PRIMARY KEY, group_name VARCHAR(64) NOT NULL, "
    "move_target VARCHAR(64) NOT NULL DEFAULT '', move_state VARCHAR(16) NOT NULL DEFAULT '', "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP"
    ") ENGINE=InnoDB",
};

enum StmtId {
  kClaim,
  kReadName,
  kReadVersion,
  kReadVersionLocked,
  kReadRows,
  kRaise,
  kPut,
  kNumStmts,
};

const char* const kSql[kNumStmts] = {
    /* kClaim */ "INSERT IGNORE INTO seqd_store_group (id, name) VALUES (1, ?)",
    /* kReadName */ "SELECT name FROM seqd_store_group WHERE id = 1",
    /* kReadVersion */ "SELECT version FROM seqd_placement WHERE id = 1",
    /* kReadVersionLocked */ "SELECT version FROM seqd_placement WHERE id = 1 FOR UPDATE",
    /* kReadRows */
    "SELECT shard, group_name, move_target, move_state FROM seqd_shard_placement ORDER BY shard",
    /* kRaise */ "UPDATE seqd_placement SET version = version + 1 WHERE id = 1 AND version = ?",
    /* kPut */
    "INSERT INTO seqd_shard_placement (shard, group_name, move_target, move_state) "
    "VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE group_name = VALUES(group_name), "
    "move_target = VALUES(move_target), move_state = VALUES(move_state)",
};

const MysqlSession kSession{kSql, nullptr, std::nullopt};

PlacementRow ReadRow(sql::ResultSet& rs) {
  return PlacementRow{static_cast<uint32_t>(rs.getInt(1)), rs.getString(2).asStdString(),
                      rs.getString(3).asStdString(), rs.getString(4).asStdString()};
}

std::string ReadName(sql::ResultSet& rs) { return rs.getString(1).asStdString(); }

}  // namespace

Status MysqlPlacementStore::ClaimGroup(std::string_view name) {
  auto held = pool_->Run<std::string>(
      kSession, "claim store group", [&](MysqlConn& c) -> Result<std::string> {
        c.Plain().execute(kGroupSchema);
        c.Commit();
        c.Execute(kClaim, name);
        std::optional<std::string> got = c.QueryRow(kReadName, ReadName);
        c.Commit();
        return got.value_or(std::string());
      });
  if (!held) return held.error();
  if (*held == name) return OkStatus();
  return MakeError(ErrorCode::kFailedPrecondition,
                   "store group '" + std::string(name) + "': its database is store group '" +
                       *held + "' (every instance must give each group the same name and URL)");
}

Status MysqlPlacementStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "placement schema", [&](MysqlConn& c) -> Result<Ok> {
    for (const char* ddl : kPlacementSchema) {
      c.Plain().execute(ddl);
      c.Commit();
    }
    return Ok{};
  });
}

Result<int64_t> MysqlPlacementStore::ReadVersion() {
  return pool_->QueryInt64(kSession, "placement version", kReadVersion, 0);
}

Result<PlacementMap> MysqlPlacementStore::ReadPlacement() {
  return pool_->Run<PlacementMap>(kSession, "read placement",
                                  [&](MysqlConn& c) -> Result<PlacementMap> {
                                    PlacementMap map;
                                    // Locked: the rows read belong to this version.
                                    map.version = c.QueryInt64(kReadVersionLocked).value_or(0);
                                    map.rows = c.QueryRows(kReadRows, ReadRow);
                                    c.Commit();
                                    return map;
                                  });
}

Result<int64_t> MysqlPlacementStore::Change(int64_t expected, const PlacementRow& row) {
  return pool_->Run<int64_t>(kSession, "change placement", [&](MysqlConn& c) -> Result<int64_t> {
    const int64_t now = c.QueryInt64(kReadVersionLocked).value_or(0);
    // A re-run after a lost COMMIT finds the version raised and the row
    // written: its own change.
    if (now == expected + 1) {
      for (const PlacementRow& r : c.QueryRows(kReadRows, ReadRow)) {
        if (r == row) {
          c.Commit();
          return now;
        }
      }
    }
    if (now != expected || c.Execute(kRaise, expected) != 1) {
      return MakeError(ErrorCode::kFailedPrecondition, "the placement changed meanwhile (version " +
                                                           std::to_string(now) + ", expected " +
                                                           std::to_string(expected) + ")");
    }
    c.Execute(kPut, static_cast<int>(row.shard), row.group, row.move_target, row.move_state);
    c.Commit();
    return expected + 1;
  });
}

}  // namespace seqd
