// Over 400 lines: MysqlMessageStore's schema and statement table, and
// Append (its group-commit fast path, the row-by-row slow path and the
// re-read after a lost COMMIT), which is one transaction and reads as one.
// The reads, members and status calls are in mysql_message_reads.cc.
#include "storage/mysql/mysql_message_store.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <utility>

#include "storage/mysql/mysql_errors.h"
#include "storage/mysql/mysql_key_columns.h"
#include "storage/mysql/mysql_message_sql.h"

namespace seqd {

using namespace mysql_message_sql;  // NOLINT: this store's private header

namespace {

// Rows per multi-row INSERT, and the payload bytes one may carry: written as
// hex literals that is 8 MiB of text, under the default max_allowed_packet
// of 16 MiB.
constexpr size_t kChunkRows = 256;
constexpr size_t kChunkBytes = 4 << 20;
// Duplicate-key retries of one row on the slow path (another process keeps
// committing the seq it stamped) before the batch fails kStoreUnavailable.
constexpr int kMaxRowRetries = 20;

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
    "SELECT seq, server_msg_id, send_time_ms FROM seqd_message "
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

constexpr char kInsertPrefix[] = "INSERT INTO seqd_message (" SEQD_MSG_COLUMNS ") VALUES ";

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

void ReadMaxSeqs(const std::function<sql::PreparedStatement&(size_t)>& stmt,
                 const std::vector<std::string>& convs,
                 std::unordered_map<std::string, int64_t>& out) {
  for (size_t at = 0; at < convs.size(); at += kInListMax) {
    const size_t n = std::min(kInListMax, convs.size() - at);
    sql::PreparedStatement& s = stmt(n);
    for (size_t i = 0; i < n; ++i) {
      s.setString(static_cast<unsigned>(i + 1), convs[at + i]);
      out[convs[at + i]] = 0;
    }
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    while (rs->next()) out[rs->getString(1).asStdString()] = rs->getInt64(2);
  }
}

}  // namespace mysql_message_sql

MysqlMessageStore::MysqlMessageStore(MysqlOptions options)
    : pool_(std::make_shared<MysqlPool>(std::move(options))) {}

MysqlMessageStore::MysqlMessageStore(std::shared_ptr<MysqlPool> pool) : pool_(std::move(pool)) {}

MysqlMessageStore::~MysqlMessageStore() = default;

std::string MysqlMessageStore::Describe() const { return DescribeMysql(pool_->options()); }

Status MysqlMessageStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "create tables", [this](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::Statement> s(c.conn->createStatement());
    for (const char* ddl : kSchema) s->execute(ddl);
    exact_ids_.store(KeyColumnIsExact(c, "seqd_message", "conv_id"), std::memory_order_relaxed);
    c.Commit();
    return Ok{};
  });
}

Result<std::vector<AppendOutcome>> MysqlMessageStore::Append(std::span<const AppendRequest> batch,
                                                             MaxSeqCache& max_seq_cache) {
  return AppendImpl(batch, max_seq_cache, nullptr);
}

Result<std::vector<AppendOutcome>> MysqlMessageStore::AppendFenced(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing& fencing) {
  return AppendImpl(batch, max_seq_cache, &fencing);
}

Result<std::vector<AppendOutcome>> MysqlMessageStore::AppendImpl(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing* fencing) {
  if (batch.empty()) return std::vector<AppendOutcome>();

  // In-batch duplicates: index of the first request with the same client key.
  std::vector<size_t> first_of(batch.size());
  std::vector<std::string> convs;  // distinct, in order of first appearance
  {
    std::unordered_map<std::string, size_t> seen;
    std::unordered_map<std::string, bool> conv_seen;
    for (size_t i = 0; i < batch.size(); ++i) {
      const AppendRequest& r = batch[i];
      std::string key;
      key.reserve(r.conv_id.size() + r.sender_id.size() + r.client_msg_id.size() + 2);
      key.append(r.conv_id).push_back('\0');
      key.append(r.sender_id).push_back('\0');
      key.append(r.client_msg_id);
      first_of[i] = seen.emplace(std::move(key), i).first->second;
      if (conv_seen.emplace(r.conv_id, true).second) convs.push_back(r.conv_id);
    }
  }

  std::unordered_map<std::string, int64_t> committed;  // new max per conversation
  auto result = pool_->Run<std::vector<AppendOutcome>>(
      kSession,
      // Safe to run again after a COMMIT with an unknown outcome: rows it
      // did store come back through the client-id key with this request's
      // server_msg_id, and keep their seqs.
      "append", [&](MysqlConn& c) -> Result<std::vector<AppendOutcome>> {
        auto max_stmt = [&](size_t n) -> sql::PreparedStatement& { return c.List(kMaxSeqIn, n); };
        // Cluster mode: write every shard's lease row last in each
        // transaction, just before COMMIT (the lease row is locked only for
        // the commit; see MysqlStore's reservation), or find the lease gone
        // and store nothing.
        auto fence = [&]() -> std::optional<Error> {
          if (!fencing) return std::nullopt;
          const std::vector<ShardFence>& fences = fencing->fences;
          // One statement per kInListMax shards; it must match every row.
          size_t matched = 0;
          for (size_t at = 0; at < fences.size(); at += kInListMax) {
            const size_t n = std::min(kInListMax, fences.size() - at);
            sql::PreparedStatement& st = c.List(kFencesIn, n);
            st.setString(1, fences[at].owner);  // one owner: this instance
            for (size_t i = 0; i < n; ++i) {
              st.setInt(static_cast<unsigned>(2 + 2 * i), static_cast<int>(fences[at + i].shard));
              st.setInt64(static_cast<unsigned>(3 + 2 * i), fences[at + i].epoch);
            }
            matched += static_cast<size_t>(st.executeUpdate());
          }
          if (matched == fences.size()) return std::nullopt;
          // Some lease moved: name one (the caller stops serving it).
          for (const ShardFence& f : fences) {
            sql::PreparedStatement& q = c.Stmt(kLeaseOf);
            q.setInt(1, static_cast<int>(f.shard));
            std::unique_ptr<sql::ResultSet> rs(q.executeQuery());
            if (!rs->next() || rs->getString(1).asStdString() != f.owner ||
                rs->getInt64(2) != f.epoch) {
              fencing->refused = f.shard;
              break;
            }
          }
          if (!fencing->refused && !fences.empty()) fencing->refused = fences.front().shard;
          return MakeError(ErrorCode::kNotServing, "shard " + std::to_string(*fencing->refused) +
                                                       " is no longer held by this instance");
        };
        std::vector<AppendOutcome> out(batch.size());
        std::unordered_map<std::string, int64_t> cur;

        // ---- fast path: trust the cache, one multi-row INSERT per chunk.
        {
          std::vector<std::string> unknown;
          for (const std::string& conv : convs) {
            auto hit = max_seq_cache.find(conv);
            if (hit != max_seq_cache.end()) {
              cur[conv] = hit->second;
            } else {
              unknown.push_back(conv);
            }
          }
          if (!unknown.empty()) ReadMaxSeqs(max_stmt, unknown, cur);
          std::vector<size_t> rows;  // requests to insert
          rows.reserve(batch.size());
          for (size_t i = 0; i < batch.size(); ++i) {
            if (first_of[i] != i) continue;
            const AppendRequest& r = batch[i];
            out[i] = AppendOutcome{++cur[r.conv_id], r.server_msg_id, r.send_time_ms, false};
            rows.push_back(i);
          }
          bool conflict = false;
          for (size_t at = 0; at < rows.size() && !conflict;) {
            size_t n = 0;
            size_t bytes = 0;
            while (at + n < rows.size() && n < kChunkRows &&
                   (n == 0 || bytes + batch[rows[at + n]].payload.size() <= kChunkBytes)) {
              bytes += batch[rows[at + n]].payload.size();
              ++n;
            }
            // One text statement with the values as literals: MariaDB binds
            // 8 parameters per row of a prepared statement one by one, which
            // costs more of its CPU than parsing the literals.
            std::string sql = kInsertPrefix;
            sql.reserve(sizeof(kInsertPrefix) + n * 96 + 2 * bytes);
            for (size_t k = 0; k < n; ++k) {
              const size_t i = rows[at + k];
              const AppendRequest& r = batch[i];
              sql += k == 0 ? "(" : ",(";
              AppendHexLiteral(sql, r.conv_id);
              sql += ',';
              sql += std::to_string(out[i].seq);
              sql += ',';
              sql += std::to_string(r.server_msg_id);
              sql += ',';
              AppendHexLiteral(sql, r.sender_id);
              sql += ',';
              AppendHexLiteral(sql, r.client_msg_id);
              sql += ',';
              sql += std::to_string(r.content_type);
              sql += ',';
              AppendHexLiteral(sql, r.payload);
              sql += ',';
              sql += std::to_string(r.send_time_ms);
              sql += ",0)";
            }
            try {
              c.Update(sql);
            } catch (const sql::SQLException& e) {
              if (e.getErrorCode() != kMysqlErrDupKey) throw;
              conflict = true;
            }
            at += n;
          }
          if (!conflict) {
            for (size_t i = 0; i < batch.size(); ++i) {
              if (first_of[i] == i) continue;
              out[i] = out[first_of[i]];
              out[i].duplicate = true;
            }
            if (auto fenced = fence()) return *fenced;  // rolled back by the pool
            c.Commit();
            committed = std::move(cur);
            return out;
          }
          c.Rollback();
        }

        // ---- slow path: row by row, reading the true max.
        cur.clear();
        ReadMaxSeqs(max_stmt, convs, cur);
        for (size_t i = 0; i < batch.size(); ++i) {
          if (first_of[i] != i) {
            out[i] = out[first_of[i]];
            out[i].duplicate = true;
            continue;
          }
          const AppendRequest& r = batch[i];
          int64_t& max = cur[r.conv_id];
          for (int attempt = 0;; ++attempt) {
            sql::PreparedStatement& ins = c.List(kInsertRows, 1);
            ins.setString(1, r.conv_id);
            ins.setInt64(2, max + 1);
            ins.setInt64(3, r.server_msg_id);
            ins.setString(4, r.sender_id);
            ins.setString(5, r.client_msg_id);
            ins.setInt(6, r.content_type);
            ins.setString(7, r.payload);
            ins.setInt64(8, r.send_time_ms);
            try {
              ins.executeUpdate();
              out[i] = AppendOutcome{++max, r.server_msg_id, r.send_time_ms, false};
              break;
            } catch (const sql::SQLException& e) {
              if (e.getErrorCode() != kMysqlErrDupKey) throw;
            }
            // Which key? A re-send (client id) or a stale max (primary key).
            sql::PreparedStatement& sel = c.Stmt(kSelectByClient);
            sel.setString(1, r.conv_id);
            sel.setString(2, r.sender_id);
            sel.setString(3, r.client_msg_id);
            std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
            if (rs->next()) {
              // Stored with this request's server_msg_id: by an earlier run
              // of this call whose COMMIT had an unknown outcome, so not a
              // duplicate of the client's.
              const int64_t stored_id = rs->getInt64(2);
              out[i] = AppendOutcome{rs->getInt64(1), stored_id, rs->getInt64(3),
                                     stored_id != r.server_msg_id};
              break;
            }
            rs.reset();
            sql::PreparedStatement& mx = c.Stmt(kMaxSeq);
            mx.setString(1, r.conv_id);
            rs.reset(mx.executeQuery());
            const int64_t true_max = rs->next() ? rs->getInt64(1) : 0;
            if (true_max <= max) {
              return MakeError(ErrorCode::kInternal,
                               "mysql append: duplicate key on neither the client id nor the seq");
            }
            if (attempt + 1 >= kMaxRowRetries) {
              return MakeError(ErrorCode::kStoreUnavailable,
                               "mysql append: conversation too contended, seq kept moving");
            }
            max = true_max;
          }
        }
        if (auto fenced = fence()) return *fenced;
        c.Commit();
        committed = std::move(cur);
        return out;
      });
  if (!result.ok()) {
    for (const std::string& conv : convs) max_seq_cache.erase(conv);
    return result;
  }
  for (auto& [conv, max] : committed) max_seq_cache[conv] = max;
  return result;
}

Status MysqlMessageStore::Ping() { return pool_->Ping(kSession, kPing); }

}  // namespace seqd
