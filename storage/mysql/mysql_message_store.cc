// MysqlMessageStore's schema, its statement table (the texts behind the ids
// of mysql_message_sql.h) and what the other files of the store share.
#include "storage/mysql/mysql_message_store.h"

#include <cppconn/connection.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "storage/mysql/mysql_key_columns.h"
#include "storage/mysql/mysql_message_sql.h"

namespace seqd {

using namespace mysql_message_sql;  // NOLINT: this store's private header

namespace {

// Ids (conversation, sender, client message, user) are any UTF-8 of up to
// 255 bytes, kept byte for byte: "a" and "A", "a" and "a " are two ids.
const char* const kSchema[] = {
    "CREATE TABLE IF NOT EXISTS seqd_message ("
    "conv_id VARBINARY(255) NOT NULL, "
    "seq BIGINT NOT NULL, "
    "server_msg_id BIGINT NOT NULL, "
    "sender_id VARBINARY(255) NOT NULL, "
    "client_msg_id VARBINARY(255) NOT NULL, "
    "content_type INT NOT NULL, "
    "payload MEDIUMBLOB NOT NULL, "
    "send_time_ms BIGINT NOT NULL, "
    "status TINYINT NOT NULL DEFAULT 0, "
    "PRIMARY KEY (conv_id, seq), "
    "UNIQUE KEY uk_seqd_message_client (conv_id, sender_id, client_msg_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS seqd_conv ("
    "conv_id VARBINARY(255) NOT NULL, "
    "min_seq BIGINT NOT NULL DEFAULT 1, "
    "PRIMARY KEY (conv_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS seqd_conv_member ("
    "conv_id VARBINARY(255) NOT NULL, "
    "user_id VARBINARY(255) NOT NULL, "
    "min_seq BIGINT NOT NULL DEFAULT 1, "
    "max_seq BIGINT DEFAULT NULL, "
    "read_seq BIGINT NOT NULL DEFAULT 0, "
    "PRIMARY KEY (conv_id, user_id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
};

#define SEQD_MSG_COLUMNS                                                                         \
  "conv_id, seq, server_msg_id, sender_id, client_msg_id, content_type, payload, send_time_ms, " \
  "status"

const char* const kSql[kNumStmts] = {
    /* kMaxSeq */ "SELECT COALESCE(MAX(seq), 0) FROM seqd_message WHERE conv_id = ?",
    /* kSelectByClient */
    "SELECT seq, server_msg_id, send_time_ms, content_type, payload, status FROM seqd_message "
    "WHERE conv_id = ? AND sender_id = ? AND client_msg_id = ?",
    /* kRangeAsc */
    "SELECT " SEQD_MSG_COLUMNS
    " FROM seqd_message WHERE conv_id = ? AND seq >= ? AND seq <= ? ORDER BY seq ASC LIMIT ?",
    /* kRangeDesc */
    "SELECT " SEQD_MSG_COLUMNS
    " FROM seqd_message WHERE conv_id = ? AND seq >= ? AND seq <= ? ORDER BY seq DESC LIMIT ?",
    /* kSelectOne */ "SELECT " SEQD_MSG_COLUMNS " FROM seqd_message WHERE conv_id = ? AND seq = ?",
    /* kSetStatus */
    "UPDATE seqd_message SET status = ?, payload = '' WHERE conv_id = ? AND seq = ?",
    /* kGetConvMin */ "SELECT min_seq FROM seqd_conv WHERE conv_id = ?",
    /* kSetConvMin */
    "INSERT INTO seqd_conv (conv_id, min_seq) VALUES (?, ?) "
    "ON DUPLICATE KEY UPDATE min_seq = VALUES(min_seq)",
    /* kGetMember */
    "SELECT min_seq, max_seq, read_seq FROM seqd_conv_member WHERE conv_id = ? AND user_id = ?",
    /* kGetMemberForUpdate */
    "SELECT min_seq, max_seq, read_seq FROM seqd_conv_member WHERE conv_id = ? AND user_id = ? "
    "FOR UPDATE",
    /* kPutMember */
    "INSERT INTO seqd_conv_member (conv_id, user_id, min_seq, max_seq, read_seq) "
    "VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE min_seq = VALUES(min_seq), "
    "max_seq = VALUES(max_seq), read_seq = VALUES(read_seq)",
    /* kSetRead */ "UPDATE seqd_conv_member SET read_seq = ? WHERE conv_id = ? AND user_id = ?",
    /* kCountUnread */
    "SELECT COUNT(*) FROM seqd_message WHERE conv_id = ? AND seq > ? AND seq <= ? "
    "AND status = 0 AND sender_id <> ?",
    /* kPing */ "SELECT 1",
    /* kLeaseOf */ "SELECT owner, epoch FROM seqd_shard_lease WHERE shard = ?",
};

std::string ListSql(ListKind kind, size_t n) {
  switch (kind) {
    case kInsertRows:
      return "INSERT INTO seqd_message (" SEQD_MSG_COLUMNS ") VALUES " +
             RepeatSql("(?,?,?,?,?,?,?,?,0)", n);
    case kMaxSeqIn:
      return "SELECT conv_id, MAX(seq) FROM seqd_message WHERE conv_id IN (" + RepeatSql("?", n) +
             ") GROUP BY conv_id";
    case kBySeqsIn:
      return "SELECT " SEQD_MSG_COLUMNS " FROM seqd_message WHERE conv_id = ? AND seq IN (" +
             RepeatSql("?", n) + ") ORDER BY seq";
    case kFencesIn:  // MysqlStore's fence (storage/shard_lease_store.h), every shard at once
      return "UPDATE seqd_shard_lease SET fences = fences + 1 WHERE owner = ? AND owner <> '' "
             "AND (shard, epoch) IN (" +
             RepeatSql("(?,?)", n) + ")";
  }
  return {};
}

std::string ListSqlById(int kind, size_t n) { return ListSql(static_cast<ListKind>(kind), n); }

}  // namespace

namespace mysql_message_sql {

const MysqlSession kSession{kSql, ListSqlById, std::nullopt};

const std::string_view kInsertRowsPrefix =
    "INSERT INTO seqd_message (" SEQD_MSG_COLUMNS ") VALUES ";

void ReadMaxSeqs(MysqlConn& c, const std::vector<std::string>& convs,
                 std::unordered_map<std::string, int64_t>& out) {
  for (size_t at = 0; at < convs.size(); at += kInListMax) {
    const size_t n = std::min(kInListMax, convs.size() - at);
    sql::PreparedStatement& s = c.List(kMaxSeqIn, n);
    for (size_t i = 0; i < n; ++i) {
      s.setString(static_cast<unsigned>(i + 1), convs[at + i]);
      out[convs[at + i]] = 0;
    }
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    while (rs->next()) out[rs->getString(1).asStdString()] = rs->getInt64(2);
  }
}

}  // namespace mysql_message_sql

Status MysqlMessageStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "create tables", [this](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::Statement> s(c.conn->createStatement());
    for (const char* ddl : kSchema) s->execute(ddl);
    exact_ids_.store(KeyColumnIsExact(c, "seqd_message", "conv_id"), std::memory_order_relaxed);
    c.Commit();
    return Ok{};
  });
}

Status MysqlMessageStore::Ping() { return pool_->Ping(kSession, kPing); }

}  // namespace seqd
