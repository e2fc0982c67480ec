// Every MessageStore call against one schema, each a short transaction;
// they share statements and are read next to the schema.
#include "storage/sqlite/sqlite_message_store.h"

#include <sqlite3.h>

#include <algorithm>

#include "storage/message_store_rows.h"

namespace seqd {
namespace {

// Primary-key conflicts one row may hit before the batch fails. After the
// first conflict the max is read under the write lock, so one retry is
// normally enough.
constexpr int kMaxSeqRetries = 3;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS seqd_message ("
    "conv_id TEXT NOT NULL, "
    "seq INTEGER NOT NULL, "
    "server_msg_id INTEGER NOT NULL, "
    "sender_id TEXT NOT NULL, "
    "client_msg_id TEXT NOT NULL, "
    "content_type INTEGER NOT NULL, "
    "payload BLOB NOT NULL, "
    "send_time_ms INTEGER NOT NULL, "
    "status INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (conv_id, seq)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS seqd_message_client "
    "ON seqd_message (conv_id, sender_id, client_msg_id);"
    "CREATE UNIQUE INDEX IF NOT EXISTS seqd_message_server_id ON seqd_message (server_msg_id);"
    "CREATE TABLE IF NOT EXISTS seqd_conv ("
    "conv_id TEXT NOT NULL PRIMARY KEY, "
    "min_seq INTEGER NOT NULL DEFAULT 1) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS seqd_conv_member ("
    "conv_id TEXT NOT NULL, "
    "user_id TEXT NOT NULL, "
    "min_seq INTEGER NOT NULL DEFAULT 1, "
    "max_seq INTEGER DEFAULT NULL, "
    "read_seq INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (conv_id, user_id)) WITHOUT ROWID;";

#define SEQD_MSG_COLUMNS                                                                         \
  "conv_id, seq, server_msg_id, sender_id, client_msg_id, content_type, payload, send_time_ms, " \
  "status"

enum StmtId {
  kMaxSeq,
  kInsert,
  kSelectByClient,
  kRangeAsc,
  kRangeDesc,
  kSelectOne,
  kSetStatus,
  kGetConvMin,
  kSetConvMin,
  kGetMember,
  kPutMember,
  kSetRead,
  kCountUnread,
  kPing,
  kNumStmts,
};

const char* const kSql[kNumStmts] = {
    /* kMaxSeq */ "SELECT COALESCE(MAX(seq), 0) FROM seqd_message WHERE conv_id = ?1",
    /* kInsert */
    "INSERT INTO seqd_message (" SEQD_MSG_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)",
    /* kSelectByClient */
    "SELECT seq, server_msg_id, send_time_ms, content_type, payload, status FROM seqd_message "
    "WHERE conv_id = ?1 AND sender_id = ?2 AND client_msg_id = ?3",
    /* kRangeAsc */
    "SELECT " SEQD_MSG_COLUMNS
    " FROM seqd_message WHERE conv_id = ?1 AND seq >= ?2 AND seq <= ?3 ORDER BY seq ASC LIMIT ?4",
    /* kRangeDesc */
    "SELECT " SEQD_MSG_COLUMNS
    " FROM seqd_message WHERE conv_id = ?1 AND seq >= ?2 AND seq <= ?3 ORDER BY seq DESC LIMIT ?4",
    /* kSelectOne */
    "SELECT " SEQD_MSG_COLUMNS " FROM seqd_message WHERE conv_id = ?1 AND seq = ?2",
    /* kSetStatus */
    "UPDATE seqd_message SET status = ?1, payload = x'' WHERE conv_id = ?2 AND seq = ?3",
    /* kGetConvMin */ "SELECT min_seq FROM seqd_conv WHERE conv_id = ?1",
    /* kSetConvMin */
    "INSERT INTO seqd_conv (conv_id, min_seq) VALUES (?1, ?2) "
    "ON CONFLICT (conv_id) DO UPDATE SET min_seq = excluded.min_seq",
    /* kGetMember */
    "SELECT min_seq, max_seq, read_seq FROM seqd_conv_member WHERE conv_id = ?1 AND user_id = ?2",
    /* kPutMember */
    "INSERT OR REPLACE INTO seqd_conv_member (conv_id, user_id, min_seq, max_seq, read_seq) "
    "VALUES (?1, ?2, ?3, ?4, ?5)",
    /* kSetRead */
    "UPDATE seqd_conv_member SET read_seq = ?3 WHERE conv_id = ?1 AND user_id = ?2",
    /* kCountUnread */
    "SELECT COUNT(*) FROM seqd_message WHERE conv_id = ?1 AND seq > ?2 AND seq <= ?3 "
    "AND status = 0 AND sender_id <> ?4",
    /* kPing */ "PRAGMA schema_version",
};

// A payload, bound as a BLOB (SqliteBind binds strings as TEXT).
struct Blob {
  std::string_view bytes;
};

int SqliteBind(sqlite3_stmt* s, int i, Blob v) {
  if (v.bytes.empty()) return sqlite3_bind_zeroblob(s, i, 0);  // a null pointer would bind NULL
  return sqlite3_bind_blob64(s, i, v.bytes.data(), v.bytes.size(), SQLITE_TRANSIENT);
}

std::string ColumnBytes(sqlite3_stmt* s, int i) {
  const void* p = sqlite3_column_blob(s, i);
  const int n = sqlite3_column_bytes(s, i);
  if (p == nullptr || n <= 0) return std::string();
  return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
}

StoredMessage ReadMessage(sqlite3_stmt* s) {
  StoredMessage m;
  m.conv_id = ColumnBytes(s, 0);
  m.seq = sqlite3_column_int64(s, 1);
  m.server_msg_id = sqlite3_column_int64(s, 2);
  m.sender_id = ColumnBytes(s, 3);
  m.client_msg_id = ColumnBytes(s, 4);
  m.content_type = static_cast<int32_t>(sqlite3_column_int64(s, 5));
  m.payload = ColumnBytes(s, 6);
  m.send_time_ms = sqlite3_column_int64(s, 7);
  m.status = MessageStatusFromColumn(sqlite3_column_int64(s, 8));
  return m;
}

MemberState ReadMember(sqlite3_stmt* s) {
  MemberState m;
  m.min_seq = sqlite3_column_int64(s, 0);
  if (sqlite3_column_type(s, 1) != SQLITE_NULL) m.max_seq = sqlite3_column_int64(s, 1);
  m.read_seq = sqlite3_column_int64(s, 2);
  return m;
}

}  // namespace

SqliteMessageStore::SqliteMessageStore(std::string path)
    : SqliteStoreBase(std::move(path), kSql, kSchema, "create tables") {}

Result<int64_t> SqliteMessageStore::MaxSeqLocked(std::string_view conv_id, const char* op) {
  Result<std::optional<int64_t>> max = db_.QueryInt64(kMaxSeq, op, conv_id);
  if (!max.ok()) return max.error();
  return max->value_or(0);  // an aggregate: always one row
}

Result<std::optional<AppendOutcome>> SqliteMessageStore::SelectByClientLocked(
    const AppendRequest& r) {
  auto read = [&](sqlite3_stmt* s) {
    const int64_t stored_id = sqlite3_column_int64(s, 1);
    const bool duplicate = stored_id != r.server_msg_id;
    const bool conflict =
        duplicate && message_store::ContentDiffers(
                         r, static_cast<int32_t>(sqlite3_column_int64(s, 3)), ColumnBytes(s, 4),
                         MessageStatusFromColumn(sqlite3_column_int64(s, 5)));
    return AppendOutcome{sqlite3_column_int64(s, 0), stored_id, sqlite3_column_int64(s, 2),
                         duplicate, conflict};
  };
  return db_.QueryRow(kSelectByClient, "append (select duplicate)", read, r.conv_id, r.sender_id,
                      r.client_msg_id);
}

Result<std::vector<AppendOutcome>> SqliteMessageStore::AppendLocked(
    std::span<const AppendRequest> batch, const MaxSeqCache& cache, MaxSeqCache& cur) {
  std::vector<AppendOutcome> out;
  out.reserve(batch.size());
  for (const AppendRequest& r : batch) {
    auto c = cur.find(r.conv_id);
    if (c == cur.end()) {
      auto hit = cache.find(r.conv_id);
      if (hit != cache.end()) {
        c = cur.emplace(r.conv_id, hit->second).first;
      } else {
        auto max = MaxSeqLocked(r.conv_id, "append (max seq)");
        if (!max.ok()) return max.error();
        c = cur.emplace(r.conv_id, *max).first;
      }
    }
    Result<AppendOutcome> stored = AppendOneLocked(r, c->second);
    if (!stored.ok()) return stored.error();
    out.push_back(*stored);
  }
  return out;
}

Result<AppendOutcome> SqliteMessageStore::AppendOneLocked(const AppendRequest& r, int64_t& max) {
  for (int attempt = 0;; ++attempt) {
    const char* op = "append (insert)";
    const int64_t seq = max + 1;
    auto s = db_.Stmt(kInsert, op, r.conv_id, seq, r.server_msg_id, r.sender_id, r.client_msg_id,
                      int64_t{r.content_type}, Blob{r.payload}, r.send_time_ms);
    if (!s.ok()) return s.error();
    SqliteResetOnExit reset(*s);
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) {
      max = seq;
      return AppendOutcome{seq, r.server_msg_id, r.send_time_ms, false};
    }
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      // The cached max was stale: read the true one (we hold the write lock).
      if (attempt + 1 >= kMaxSeqRetries) return db_.SqlError(rc, op);
      auto true_max = MaxSeqLocked(r.conv_id, "append (reread max seq)");
      if (!true_max.ok()) return true_max.error();
      max = *true_max;
      continue;
    }
    if (rc != SQLITE_CONSTRAINT_UNIQUE) return db_.SqlError(rc, op);
    // A re-send (client id), or a server_msg_id already used (a bug).
    auto dup = SelectByClientLocked(r);
    if (!dup.ok()) return dup.error();
    if (!dup->has_value()) {
      return MakeError(
          ErrorCode::kInternal,
          "sqlite append: server_msg_id " + std::to_string(r.server_msg_id) + " already stored");
    }
    return **dup;
  }
}

Result<std::vector<AppendOutcome>> SqliteMessageStore::Append(std::span<const AppendRequest> batch,
                                                              MaxSeqCache& max_seq_cache) {
  auto fail = [&](Error e) {
    for (const AppendRequest& r : batch) max_seq_cache.erase(r.conv_id);
    return e;
  };
  if (batch.empty()) return std::vector<AppendOutcome>();
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "append");
  if (Status st = txn.Begin(); !st.ok()) return fail(st.error());
  MaxSeqCache cur;
  auto out = AppendLocked(batch, max_seq_cache, cur);
  if (!out.ok()) return fail(out.error());
  if (Status st = txn.Commit(); !st.ok()) return fail(st.error());
  for (auto& [conv, max] : cur) max_seq_cache[conv] = max;
  return out;
}

Result<int64_t> SqliteMessageStore::MaxSeq(std::string_view conv_id) {
  MutexLock lock(mu_);
  return MaxSeqLocked(conv_id, "max seq");
}

Result<std::vector<int64_t>> SqliteMessageStore::MaxSeqs(std::span<const std::string> conv_ids) {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  out.reserve(conv_ids.size());
  for (const std::string& c : conv_ids) {
    auto max = MaxSeqLocked(c, "max seqs");
    if (!max.ok()) return max.error();
    out.push_back(*max);
  }
  return out;
}

Result<MessagePage> SqliteMessageStore::GetRange(const RangeQuery& q) {
  if (Status valid = message_store::CheckRange(q); !valid.ok()) return valid.error();
  const int64_t limit = ClampRangeLimit(q.limit);
  MessagePage page;
  auto add = [&](sqlite3_stmt* s) {
    if (static_cast<int64_t>(page.messages.size()) == limit) {
      page.more = true;
      return false;
    }
    page.messages.push_back(ReadMessage(s));
    return true;
  };
  MutexLock lock(mu_);
  Status st = db_.ForEachRow(q.descending ? kRangeDesc : kRangeAsc, "get range", add, q.conv_id,
                             q.from_seq, q.to_seq, limit + 1);
  if (!st.ok()) return st.error();
  return page;
}

Result<std::optional<StoredMessage>> SqliteMessageStore::SelectOneLocked(std::string_view conv_id,
                                                                         int64_t seq,
                                                                         const char* op) {
  return db_.QueryRow(kSelectOne, op, ReadMessage, conv_id, seq);
}

Result<std::vector<StoredMessage>> SqliteMessageStore::GetBySeqs(std::string_view conv_id,
                                                                 std::span<const int64_t> seqs) {
  std::vector<int64_t> sorted(seqs.begin(), seqs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  MutexLock lock(mu_);
  std::vector<StoredMessage> out;
  for (int64_t seq : sorted) {
    auto m = SelectOneLocked(conv_id, seq, "get by seqs");
    if (!m.ok()) return m.error();
    if (m->has_value()) out.push_back(std::move(**m));
  }
  return out;
}

Result<StoredMessage> SqliteMessageStore::SetStatus(std::string_view conv_id, int64_t seq,
                                                    MessageStatus status) {
  if (Status valid = message_store::CheckNewStatus(status); !valid.ok()) return valid.error();
  MutexLock lock(mu_);
  Status st = db_.Exec(kSetStatus, "set status", static_cast<int64_t>(status), conv_id, seq);
  if (!st.ok()) return st.error();
  if (db_.Changes() == 0) return MakeError(ErrorCode::kNotFound, "no such message");
  auto m = SelectOneLocked(conv_id, seq, "set status (select)");
  if (!m.ok()) return m.error();
  if (!m->has_value()) return MakeError(ErrorCode::kNotFound, "no such message");
  return std::move(**m);
}

Result<int64_t> SqliteMessageStore::GetConvMinSeq(std::string_view conv_id) {
  MutexLock lock(mu_);
  Result<std::optional<int64_t>> min = db_.QueryInt64(kGetConvMin, "get conv min seq", conv_id);
  if (!min.ok()) return min.error();
  return min->value_or(1);
}

Status SqliteMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  MutexLock lock(mu_);
  return db_.Exec(kSetConvMin, "set conv min seq", conv_id, min_seq);
}

Result<std::optional<MemberState>> SqliteMessageStore::GetMember(std::string_view conv_id,
                                                                 std::string_view user_id) {
  MutexLock lock(mu_);
  return db_.QueryRow(kGetMember, "get member", ReadMember, conv_id, user_id);
}

Status SqliteMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                     const MemberState& state) {
  MutexLock lock(mu_);
  return db_.Exec(kPutMember, "put member", conv_id, user_id, state.min_seq, state.max_seq,
                  state.read_seq);
}

Result<MemberState> SqliteMessageStore::SetReadSeq(std::string_view conv_id,
                                                   std::string_view user_id, int64_t read_seq,
                                                   int64_t upper) {
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "set read seq");
  if (Status st = txn.Begin(); !st.ok()) return st.error();
  Result<std::optional<MemberState>> m =
      db_.QueryRow(kGetMember, "set read seq (select)", ReadMember, conv_id, user_id);
  if (!m.ok()) return m.error();
  if (!*m) return MakeError(ErrorCode::kNotFound, "not a member");
  if (read_seq < (*m)->read_seq) {
    return MakeError(ErrorCode::kFailedPrecondition, "read_seq " + std::to_string(read_seq) +
                                                         " is below the stored read_seq " +
                                                         std::to_string((*m)->read_seq));
  }
  if (read_seq > upper) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "read_seq " + std::to_string(read_seq) + " is above " + std::to_string(upper));
  }
  if (read_seq != (*m)->read_seq) {
    Status st = db_.Exec(kSetRead, "set read seq (update)", conv_id, user_id, read_seq);
    if (!st.ok()) return st.error();
  }
  if (Status st = txn.Commit(); !st.ok()) return st.error();
  (*m)->read_seq = read_seq;
  return **m;
}

Result<int64_t> SqliteMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                                int64_t after_seq, int64_t upto_seq) {
  MutexLock lock(mu_);
  Result<std::optional<int64_t>> n =
      db_.QueryInt64(kCountUnread, "count unread", conv_id, after_seq, upto_seq, user_id);
  if (!n.ok()) return n.error();
  return n->value_or(0);  // an aggregate: always one row
}

Status SqliteMessageStore::Ping() {
  MutexLock lock(mu_);
  return db_.Exec(kPing, "ping");
}

}  // namespace seqd
