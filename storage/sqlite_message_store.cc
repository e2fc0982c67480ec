#include "storage/sqlite_message_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <system_error>

namespace seqd {
namespace {

constexpr int kBusyTimeoutMs = 5000;
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

const char* const kSql[] = {
    /* kBegin */ "BEGIN IMMEDIATE",
    /* kCommit */ "COMMIT",
    /* kRollback */ "ROLLBACK",
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

class ResetOnExit {
 public:
  explicit ResetOnExit(sqlite3_stmt* s) : s_(s) {}
  ~ResetOnExit() { sqlite3_reset(s_); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  sqlite3_stmt* s_;
};

bool IsUnavailable(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
    case SQLITE_READONLY:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_NOLFS:
    case SQLITE_AUTH:
      return true;
    default:
      return false;
  }
}

int BindText(sqlite3_stmt* s, int i, std::string_view v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

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

MessageStatus ToStatus(int64_t v) {
  switch (v) {
    case 1:
      return MessageStatus::kRecalled;
    case 2:
      return MessageStatus::kDeleted;
    default:
      return MessageStatus::kNormal;
  }
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
  m.status = ToStatus(sqlite3_column_int64(s, 8));
  return m;
}

int64_t ClampLimit(size_t limit) {
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max() - 1);
  return static_cast<int64_t>(limit < max ? limit : max);
}

}  // namespace

SqliteMessageStore::SqliteMessageStore(std::string path) : path_(std::move(path)) {}

SqliteMessageStore::~SqliteMessageStore() {
  std::lock_guard lock(mu_);
  CloseLocked();
}

Result<std::unique_ptr<SqliteMessageStore>> SqliteMessageStore::Open(const std::string& path) {
  auto store = std::make_unique<SqliteMessageStore>(path);
  {
    std::lock_guard lock(store->mu_);
    Status st = store->OpenLocked();
    if (!st.ok()) return st.error();
  }
  return store;
}

Status SqliteMessageStore::OpenLocked() {
  if (db_ != nullptr) return OkStatus();
  if (path_.empty()) return MakeError(ErrorCode::kInvalidArgument, "sqlite open: empty path");

  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty() && path_ != ":memory:") {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) {
      return MakeError(ErrorCode::kStoreUnavailable, "sqlite open: cannot create directory '" +
                                                         parent.string() + "': " + ec.message());
    }
  }

  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path_.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  auto fail = [&](const std::string& what) -> Error {
    std::string msg = "sqlite open '" + path_ + "': " + what;
    if (db != nullptr) {
      msg += ": ";
      msg += sqlite3_errmsg(db);
      sqlite3_close_v2(db);
    }
    return MakeError(ErrorCode::kStoreUnavailable, std::move(msg));
  };
  if (rc != SQLITE_OK) return fail(sqlite3_errstr(rc));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);

  std::string mode;
  rc = sqlite3_exec(
      db, "PRAGMA journal_mode=WAL",
      [](void* out, int n, char** vals, char**) {
        if (n > 0 && vals[0] != nullptr) *static_cast<std::string*>(out) = vals[0];
        return 0;
      },
      &mode, nullptr);
  if (rc != SQLITE_OK) return fail("setting journal_mode=WAL");
  if (mode != "wal" && mode != "memory") return fail("journal_mode is '" + mode + "', not wal");
  rc = sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail("setting synchronous=FULL");

  db_ = db;
  return OkStatus();
}

void SqliteMessageStore::CloseLocked() {
  for (auto& s : stmts_) {
    if (s != nullptr) sqlite3_finalize(s);
    s = nullptr;
  }
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Error SqliteMessageStore::SqlError(int rc, const char* op) {
  std::string msg = std::string("sqlite ") + op + ": ";
  msg += db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  msg += " (code " + std::to_string(rc) + ")";
  return MakeError(IsUnavailable(rc) ? ErrorCode::kStoreUnavailable : ErrorCode::kInternal,
                   std::move(msg));
}

Result<sqlite3_stmt*> SqliteMessageStore::Stmt(StmtId id, const char* op) {
  Status st = OpenLocked();
  if (!st.ok()) return st.error();
  sqlite3_stmt*& s = stmts_[id];
  if (s == nullptr) {
    int rc = sqlite3_prepare_v3(db_, kSql[id], -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) {
      Error e = SqlError(rc, op);
      sqlite3_finalize(s);
      s = nullptr;
      return e;
    }
  } else {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  return s;
}

Status SqliteMessageStore::ExecLocked(StmtId id, const char* op) {
  auto s = Stmt(id, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(rc, op);
  return OkStatus();
}

void SqliteMessageStore::RollbackLocked() {
  if (db_ == nullptr || sqlite3_get_autocommit(db_)) return;
  for (auto* s : stmts_) {
    if (s != nullptr) sqlite3_reset(s);
  }
  if (!ExecLocked(kRollback, "rollback").ok()) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status SqliteMessageStore::EnsureSchema() {
  std::lock_guard lock(mu_);
  Status st = OpenLocked();
  if (!st.ok()) return st;
  int rc = sqlite3_exec(db_, kSchema, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqlError(rc, "create tables");
  return OkStatus();
}

Result<int64_t> SqliteMessageStore::MaxSeqLocked(std::string_view conv_id, const char* op) {
  auto s = Stmt(kMaxSeq, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Result<std::optional<AppendOutcome>> SqliteMessageStore::SelectByClientLocked(
    const AppendRequest& r) {
  const char* op = "append (select duplicate)";
  auto s = Stmt(kSelectByClient, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, r.conv_id);
  BindText(*s, 2, r.sender_id);
  BindText(*s, 3, r.client_msg_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<AppendOutcome>();
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return std::optional<AppendOutcome>(AppendOutcome{
      sqlite3_column_int64(*s, 0), sqlite3_column_int64(*s, 1), sqlite3_column_int64(*s, 2), true});
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
      auto s = Stmt(kInsert, op);
      if (!s.ok()) return s.error();
      ResetOnExit reset(*s);
      const int64_t seq = c->second + 1;
      BindText(*s, 1, r.conv_id);
      sqlite3_bind_int64(*s, 2, seq);
      sqlite3_bind_int64(*s, 3, r.server_msg_id);
      BindText(*s, 4, r.sender_id);
      BindText(*s, 5, r.client_msg_id);
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
        if (attempt + 1 >= kMaxSeqRetries) return SqlError(rc, op);
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
      return SqlError(rc, op);
    }
  }
  return out;
}

Result<std::vector<AppendOutcome>> SqliteMessageStore::Append(std::span<const AppendRequest> batch,
                                                              MaxSeqCache& max_seq_cache) {
  auto fail = [&](Error e) -> Error {
    for (const AppendRequest& r : batch) max_seq_cache.erase(r.conv_id);
    return e;
  };
  if (batch.empty()) return std::vector<AppendOutcome>();
  std::lock_guard lock(mu_);
  Status st = ExecLocked(kBegin, "append (begin)");
  if (!st.ok()) return fail(st.error());
  MaxSeqCache cur;
  auto out = AppendLocked(batch, max_seq_cache, cur);
  if (!out.ok()) {
    RollbackLocked();
    return fail(out.error());
  }
  st = ExecLocked(kCommit, "append (commit)");
  if (!st.ok()) {
    RollbackLocked();
    return fail(st.error());
  }
  for (auto& [conv, max] : cur) max_seq_cache[conv] = max;
  return out;
}

Result<int64_t> SqliteMessageStore::MaxSeq(std::string_view conv_id) {
  std::lock_guard lock(mu_);
  return MaxSeqLocked(conv_id, "max seq");
}

Result<std::vector<int64_t>> SqliteMessageStore::MaxSeqs(std::span<const std::string> conv_ids) {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  const char* op = "get range";
  auto s = Stmt(q.descending ? kRangeDesc : kRangeAsc, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, q.conv_id);
  sqlite3_bind_int64(*s, 2, q.from_seq);
  sqlite3_bind_int64(*s, 3, q.to_seq);
  const int64_t limit = ClampLimit(q.limit);
  sqlite3_bind_int64(*s, 4, limit + 1);
  MessagePage page;
  for (;;) {
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqlError(rc, op);
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
  auto s = Stmt(kSelectOne, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, seq);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<StoredMessage>();
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return std::optional<StoredMessage>(ReadMessage(*s));
}

Result<std::vector<StoredMessage>> SqliteMessageStore::GetBySeqs(std::string_view conv_id,
                                                                 std::span<const int64_t> seqs) {
  std::vector<int64_t> sorted(seqs.begin(), seqs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  const char* op = "set status";
  {
    auto s = Stmt(kSetStatus, op);
    if (!s.ok()) return s.error();
    ResetOnExit reset(*s);
    sqlite3_bind_int64(*s, 1, static_cast<int64_t>(status));
    BindText(*s, 2, conv_id);
    sqlite3_bind_int64(*s, 3, seq);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return SqlError(rc, op);
    if (sqlite3_changes(db_) == 0) return MakeError(ErrorCode::kNotFound, "no such message");
  }
  auto m = SelectOneLocked(conv_id, seq, "set status (select)");
  if (!m.ok()) return m.error();
  if (!m->has_value()) return MakeError(ErrorCode::kNotFound, "no such message");
  return std::move(**m);
}

Result<int64_t> SqliteMessageStore::GetConvMinSeq(std::string_view conv_id) {
  std::lock_guard lock(mu_);
  const char* op = "get conv min seq";
  auto s = Stmt(kGetConvMin, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return int64_t{1};
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Status SqliteMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  std::lock_guard lock(mu_);
  const char* op = "set conv min seq";
  auto s = Stmt(kSetConvMin, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, min_seq);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return SqlError(rc, op);
  return OkStatus();
}

Result<std::optional<MemberState>> SqliteMessageStore::GetMember(std::string_view conv_id,
                                                                 std::string_view user_id) {
  std::lock_guard lock(mu_);
  const char* op = "get member";
  auto s = Stmt(kGetMember, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  BindText(*s, 2, user_id);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return std::optional<MemberState>();
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  MemberState m;
  m.min_seq = sqlite3_column_int64(*s, 0);
  if (sqlite3_column_type(*s, 1) != SQLITE_NULL) m.max_seq = sqlite3_column_int64(*s, 1);
  m.read_seq = sqlite3_column_int64(*s, 2);
  return std::optional<MemberState>(m);
}

Status SqliteMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                     const MemberState& state) {
  std::lock_guard lock(mu_);
  const char* op = "put member";
  auto s = Stmt(kPutMember, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  BindText(*s, 2, user_id);
  sqlite3_bind_int64(*s, 3, state.min_seq);
  if (state.max_seq) {
    sqlite3_bind_int64(*s, 4, *state.max_seq);
  } else {
    sqlite3_bind_null(*s, 4);
  }
  sqlite3_bind_int64(*s, 5, state.read_seq);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE) return SqlError(rc, op);
  return OkStatus();
}

Result<MemberState> SqliteMessageStore::SetReadSeq(std::string_view conv_id,
                                                   std::string_view user_id, int64_t read_seq,
                                                   int64_t upper) {
  std::lock_guard lock(mu_);
  Status st = ExecLocked(kBegin, "set read seq (begin)");
  if (!st.ok()) return st.error();
  auto fail = [&](Error e) -> Error {
    RollbackLocked();
    return e;
  };
  MemberState m;
  {
    const char* op = "set read seq (select)";
    auto s = Stmt(kGetMember, op);
    if (!s.ok()) return fail(s.error());
    ResetOnExit reset(*s);
    BindText(*s, 1, conv_id);
    BindText(*s, 2, user_id);
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) return fail(MakeError(ErrorCode::kNotFound, "not a member"));
    if (rc != SQLITE_ROW) return fail(SqlError(rc, op));
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
    auto s = Stmt(kSetRead, op);
    if (!s.ok()) return fail(s.error());
    ResetOnExit reset(*s);
    BindText(*s, 1, conv_id);
    BindText(*s, 2, user_id);
    sqlite3_bind_int64(*s, 3, read_seq);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return fail(SqlError(rc, op));
  }
  st = ExecLocked(kCommit, "set read seq (commit)");
  if (!st.ok()) return fail(st.error());
  m.read_seq = read_seq;
  return m;
}

Result<int64_t> SqliteMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                                int64_t after_seq, int64_t upto_seq) {
  std::lock_guard lock(mu_);
  const char* op = "count unread";
  auto s = Stmt(kCountUnread, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, conv_id);
  sqlite3_bind_int64(*s, 2, after_seq);
  sqlite3_bind_int64(*s, 3, upto_seq);
  BindText(*s, 4, user_id);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return sqlite3_column_int64(*s, 0);
}

Status SqliteMessageStore::Ping() {
  std::lock_guard lock(mu_);
  return ExecLocked(kPing, "ping");
}

}  // namespace seqd
