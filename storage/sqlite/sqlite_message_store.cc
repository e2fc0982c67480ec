// Over 400 lines: every MessageStore call against one schema, each a short
// transaction; they share statements and are read next to the schema.
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
    "SELECT seq, server_msg_id, send_time_ms FROM seqd_message "
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

int BindBlob(sqlite3_stmt* s, int i, std::string_view v) {
  if (v.empty()) return sqlite3_bind_zeroblob(s, i, 0);  // a null pointer would bind NULL
  return sqlite3_bind_blob64(s, i, v.data(), v.size(), SQLITE_TRANSIENT);
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

}  // namespace

SqliteMessageStore::SqliteMessageStore(std::string path)
    : path_(path), db_(std::move(path), kSql) {}

SqliteMessageStore::~SqliteMessageStore() = default;

Result<std::unique_ptr<SqliteMessageStore>> SqliteMessageStore::Open(const std::string& path) {
  auto store = std::make_unique<SqliteMessageStore>(path);
  {
    MutexLock lock(store->mu_);
    Status st = store->db_.Open();
    if (!st.ok()) return st.error();
  }
  return store;
}

Status SqliteMessageStore::EnsureSchema() {
  MutexLock lock(mu_);
  return db_.ExecScript(kSchema, "create tables");
}

Result<int64_t> SqliteMessageStore::MaxSeqLocked(std::string_view conv_id, const char* op) {
  auto s = db_.Stmt(kMaxSeq, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Result<std::optional<AppendOutcome>> SqliteMessageStore::SelectByClientLocked(
    const AppendRequest& r) {
  const char* op = "append (select duplicate)";
  auto s = db_.Stmt(kSelectByClient, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, r.conv_id);
  SqliteBindText(*s, 2, r.sender_id);
  SqliteBindText(*s, 3, r.client_msg_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<AppendOutcome>();
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  const int64_t stored_id = sqlite3_column_int64(*s, 1);
  return std::optional<AppendOutcome>(AppendOutcome{sqlite3_column_int64(*s, 0), stored_id,
                                                    sqlite3_column_int64(*s, 2),
                                                    stored_id != r.server_msg_id});
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
    for (int attempt = 0;; ++attempt) {
      const char* op = "append (insert)";
      auto s = db_.Stmt(kInsert, op);
      if (!s.ok()) return s.error();
      SqliteResetOnExit reset(*s);
      const int64_t seq = c->second + 1;
      SqliteBindText(*s, 1, r.conv_id);
      sqlite3_bind_int64(*s, 2, seq);
      sqlite3_bind_int64(*s, 3, r.server_msg_id);
      SqliteBindText(*s, 4, r.sender_id);
      SqliteBindText(*s, 5, r.client_msg_id);
      sqlite3_bind_int64(*s, 6, r.content_type);
      BindBlob(*s, 7, r.payload);
      sqlite3_bind_int64(*s, 8, r.send_time_ms);
      const int rc = sqlite3_step(*s);
      if (rc == SQLITE_DONE) {
        c->second = seq;
        out.push_back(AppendOutcome{seq, r.server_msg_id, r.send_time_ms, false});
        break;
      }
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
        // The cached max was stale: read the true one (we hold the write lock).
        if (attempt + 1 >= kMaxSeqRetries) return db_.SqlError(rc, op);
        auto max = MaxSeqLocked(r.conv_id, "append (reread max seq)");
        if (!max.ok()) return max.error();
        c->second = *max;
        continue;
      }
      if (rc == SQLITE_CONSTRAINT_UNIQUE) {
        // A re-send (client id), or a server_msg_id already used (a bug).
        auto dup = SelectByClientLocked(r);
        if (!dup.ok()) return dup.error();
        if (!dup->has_value()) {
          return MakeError(ErrorCode::kInternal, "sqlite append: server_msg_id " +
                                                     std::to_string(r.server_msg_id) +
                                                     " already stored");
        }
        out.push_back(**dup);
        break;
      }
      return db_.SqlError(rc, op);
    }
  }
  return out;
}

Result<std::vector<AppendOutcome>> SqliteMessageStore::Append(std::span<const AppendRequest> batch,
                                                              MaxSeqCache& max_seq_cache) {
  auto fail = [&](Error e) REQUIRES(mu_) -> Error {
    for (const AppendRequest& r : batch) max_seq_cache.erase(r.conv_id);
    return e;
  };
  if (batch.empty()) return std::vector<AppendOutcome>();
  MutexLock lock(mu_);
  Status st = db_.Begin("append (begin)");
  if (!st.ok()) return fail(st.error());
  MaxSeqCache cur;
  auto out = AppendLocked(batch, max_seq_cache, cur);
  if (!out.ok()) {
    db_.Rollback();
    return fail(out.error());
  }
  st = db_.Commit("append (commit)");
  if (!st.ok()) {
    db_.Rollback();
    return fail(st.error());
  }
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
  if (q.from_seq > q.to_seq || q.limit == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "get range: REQUIRES from_seq <= to_seq and limit >= 1");
  }
  MutexLock lock(mu_);
  const char* op = "get range";
  auto s = db_.Stmt(q.descending ? kRangeDesc : kRangeAsc, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, q.conv_id);
  sqlite3_bind_int64(*s, 2, q.from_seq);
  sqlite3_bind_int64(*s, 3, q.to_seq);
  const int64_t limit = ClampRangeLimit(q.limit);
  sqlite3_bind_int64(*s, 4, limit + 1);
  MessagePage page;
  for (;;) {
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
    if (static_cast<int64_t>(page.messages.size()) == limit) {
      page.more = true;
      break;
    }
    page.messages.push_back(ReadMessage(*s));
  }
  return page;
}

Result<std::optional<StoredMessage>> SqliteMessageStore::SelectOneLocked(std::string_view conv_id,
                                                                         int64_t seq,
                                                                         const char* op) {
  auto s = db_.Stmt(kSelectOne, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, seq);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<StoredMessage>();
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  return std::optional<StoredMessage>(ReadMessage(*s));
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
  if (status == MessageStatus::kNormal) {
    return MakeError(ErrorCode::kInvalidArgument, "set status: REQUIRES status != normal");
  }
  MutexLock lock(mu_);
  const char* op = "set status";
  {
    auto s = db_.Stmt(kSetStatus, op);
    if (!s.ok()) return s.error();
    SqliteResetOnExit reset(*s);
    sqlite3_bind_int64(*s, 1, static_cast<int64_t>(status));
    SqliteBindText(*s, 2, conv_id);
    sqlite3_bind_int64(*s, 3, seq);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return db_.SqlError(rc, op);
    if (db_.Changes() == 0) return MakeError(ErrorCode::kNotFound, "no such message");
  }
  auto m = SelectOneLocked(conv_id, seq, "set status (select)");
  if (!m.ok()) return m.error();
  if (!m->has_value()) return MakeError(ErrorCode::kNotFound, "no such message");
  return std::move(**m);
}

Result<int64_t> SqliteMessageStore::GetConvMinSeq(std::string_view conv_id) {
  MutexLock lock(mu_);
  const char* op = "get conv min seq";
  auto s = db_.Stmt(kGetConvMin, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return int64_t{1};
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Status SqliteMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  MutexLock lock(mu_);
  const char* op = "set conv min seq";
  auto s = db_.Stmt(kSetConvMin, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, min_seq);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return db_.SqlError(rc, op);
  return OkStatus();
}

Result<std::optional<MemberState>> SqliteMessageStore::GetMember(std::string_view conv_id,
                                                                 std::string_view user_id) {
  MutexLock lock(mu_);
  const char* op = "get member";
  auto s = db_.Stmt(kGetMember, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  SqliteBindText(*s, 2, user_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<MemberState>();
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  MemberState m;
  m.min_seq = sqlite3_column_int64(*s, 0);
  if (sqlite3_column_type(*s, 1) != SQLITE_NULL) m.max_seq = sqlite3_column_int64(*s, 1);
  m.read_seq = sqlite3_column_int64(*s, 2);
  return std::optional<MemberState>(m);
}

Status SqliteMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                     const MemberState& state) {
  MutexLock lock(mu_);
  const char* op = "put member";
  auto s = db_.Stmt(kPutMember, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  SqliteBindText(*s, 2, user_id);
  sqlite3_bind_int64(*s, 3, state.min_seq);
  if (state.max_seq) {
    sqlite3_bind_int64(*s, 4, *state.max_seq);
  } else {
    sqlite3_bind_null(*s, 4);
  }
  sqlite3_bind_int64(*s, 5, state.read_seq);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return db_.SqlError(rc, op);
  return OkStatus();
}

Result<MemberState> SqliteMessageStore::SetReadSeq(std::string_view conv_id,
                                                   std::string_view user_id, int64_t read_seq,
                                                   int64_t upper) {
  MutexLock lock(mu_);
  Status st = db_.Begin("set read seq (begin)");
  if (!st.ok()) return st.error();
  auto fail = [&](Error e) REQUIRES(mu_) -> Error {
    db_.Rollback();
    return e;
  };
  MemberState m;
  {
    const char* op = "set read seq (select)";
    auto s = db_.Stmt(kGetMember, op);
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    SqliteBindText(*s, 1, conv_id);
    SqliteBindText(*s, 2, user_id);
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return fail(MakeError(ErrorCode::kNotFound, "not a member"));
    if (rc != SQLITE_ROW) return fail(db_.SqlError(rc, op));
    m.min_seq = sqlite3_column_int64(*s, 0);
    if (sqlite3_column_type(*s, 1) != SQLITE_NULL) m.max_seq = sqlite3_column_int64(*s, 1);
    m.read_seq = sqlite3_column_int64(*s, 2);
  }
  if (read_seq < m.read_seq) {
    return fail(MakeError(ErrorCode::kFailedPrecondition, "read_seq " + std::to_string(read_seq) +
                                                              " is below the stored read_seq " +
                                                              std::to_string(m.read_seq)));
  }
  if (read_seq > upper) {
    return fail(
        MakeError(ErrorCode::kFailedPrecondition,
                  "read_seq " + std::to_string(read_seq) + " is above " + std::to_string(upper)));
  }
  if (read_seq != m.read_seq) {
    const char* op = "set read seq (update)";
    auto s = db_.Stmt(kSetRead, op);
    if (!s.ok()) return fail(s.error());
    SqliteResetOnExit reset(*s);
    SqliteBindText(*s, 1, conv_id);
    SqliteBindText(*s, 2, user_id);
    sqlite3_bind_int64(*s, 3, read_seq);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return fail(db_.SqlError(rc, op));
  }
  st = db_.Commit("set read seq (commit)");
  if (!st.ok()) return fail(st.error());
  m.read_seq = read_seq;
  return m;
}

Result<int64_t> SqliteMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                                int64_t after_seq, int64_t upto_seq) {
  MutexLock lock(mu_);
  const char* op = "count unread";
  auto s = db_.Stmt(kCountUnread, op);
  if (!s.ok()) return s.error();
  SqliteResetOnExit reset(*s);
  SqliteBindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, after_seq);
  sqlite3_bind_int64(*s, 3, upto_seq);
  SqliteBindText(*s, 4, user_id);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_ROW) return db_.SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Status SqliteMessageStore::Ping() {
  MutexLock lock(mu_);
  return db_.Exec(kPing, "ping");
}

}  // namespace seqd
