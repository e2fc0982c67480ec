#include "storage/sqlite_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <limits>
#include <system_error>

namespace seqd {
namespace {

constexpr int kBusyTimeoutMs = 5000;

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS leaf_alloc ("
    "biz_tag VARCHAR(128) PRIMARY KEY, "
    "max_id BIGINT NOT NULL DEFAULT 1, "
    "step INT NOT NULL, "
    "description VARCHAR(256) DEFAULT NULL, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)";

// Same text format as CURRENT_TIMESTAMP, with milliseconds, in UTC.
#define SEQD_SQLITE_NOW "strftime('%Y-%m-%d %H:%M:%f', 'now')"
// update_time as unix millis; NULL (read as 0) if it does not parse.
#define SEQD_SQLITE_ROW_COLUMNS          \
  "biz_tag, max_id, step, description, " \
  "CAST(ROUND((julianday(update_time) - 2440587.5) * 86400000.0) AS INTEGER)"

const char* const kSql[] = {
    /* kBegin */ "BEGIN IMMEDIATE",
    /* kCommit */ "COMMIT",
    /* kRollback */ "ROLLBACK",
    /* kReserveUpdate */
    "UPDATE leaf_alloc SET max_id = max_id + COALESCE(?1, step), update_time = " SEQD_SQLITE_NOW
    " WHERE biz_tag = ?2",
    /* kReserveSelect */ "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?1",
    /* kInsert */
    "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) "
    "VALUES (?1, 1, ?2, ?3, " SEQD_SQLITE_NOW ")",
    /* kSelectOne */ "SELECT " SEQD_SQLITE_ROW_COLUMNS " FROM leaf_alloc WHERE biz_tag = ?1",
    /* kList */
    "SELECT " SEQD_SQLITE_ROW_COLUMNS
    " FROM leaf_alloc WHERE biz_tag > ?1 ORDER BY biz_tag LIMIT ?2",
    /* kSetStep */
    "UPDATE leaf_alloc SET step = ?1, update_time = " SEQD_SQLITE_NOW " WHERE biz_tag = ?2",
    /* kPing */ "PRAGMA schema_version",
};

// Resets a statement when the scope ends so no read transaction stays open.
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

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  if (p == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

KeyRow ReadRow(sqlite3_stmt* s) {
  KeyRow row;
  row.key = ColumnText(s, 0);
  row.max_id = sqlite3_column_int64(s, 1);
  row.step = sqlite3_column_int64(s, 2);
  row.description = ColumnText(s, 3);
  row.update_time_ms = sqlite3_column_int64(s, 4);
  return row;
}

}  // namespace

SqliteStore::SqliteStore(std::string path) : path_(std::move(path)) {}

SqliteStore::~SqliteStore() {
  std::lock_guard lock(mu_);
  CloseLocked();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  auto store = std::make_unique<SqliteStore>(path);
  {
    std::lock_guard lock(store->mu_);
    Status st = store->OpenLocked();
    if (!st.ok()) return st.error();
  }
  return store;
}

Status SqliteStore::OpenLocked() {
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

  // journal_mode answers with the mode actually in effect.
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

void SqliteStore::CloseLocked() {
  for (auto& s : stmts_) {
    if (s != nullptr) sqlite3_finalize(s);
    s = nullptr;
  }
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Error SqliteStore::SqlError(int rc, const char* op) {
  std::string msg = std::string("sqlite ") + op + ": ";
  msg += db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  msg += " (code " + std::to_string(rc) + ")";
  return MakeError(IsUnavailable(rc) ? ErrorCode::kStoreUnavailable : ErrorCode::kInternal,
                   std::move(msg));
}

Result<sqlite3_stmt*> SqliteStore::Stmt(StmtId id, const char* op) {
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

Status SqliteStore::ExecLocked(StmtId id, const char* op) {
  auto s = Stmt(id, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  int rc = sqlite3_step(*s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(rc, op);
  return OkStatus();
}

void SqliteStore::RollbackLocked() {
  if (db_ == nullptr || sqlite3_get_autocommit(db_)) return;  // no transaction open
  if (!ExecLocked(kRollback, "rollback").ok()) {
    // Last resort: the statement cache may be the problem.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status SqliteStore::EnsureSchema() {
  std::lock_guard lock(mu_);
  Status st = OpenLocked();
  if (!st.ok()) return st;
  int rc = sqlite3_exec(db_, kCreateTable, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqlError(rc, "create table");
  return OkStatus();
}

Result<ReservedSegment> SqliteStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  if (step && *step <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "sqlite reserve: step must be > 0");
  }
  std::lock_guard lock(mu_);
  Status st = ExecLocked(kBegin, "reserve (begin)");
  if (!st.ok()) return st.error();

  auto fail = [&](Error e) -> Error {
    for (StmtId id : {kReserveUpdate, kReserveSelect}) {
      if (stmts_[id] != nullptr) sqlite3_reset(stmts_[id]);
    }
    RollbackLocked();
    return e;
  };

  {
    auto upd = Stmt(kReserveUpdate, "reserve (update)");
    if (!upd.ok()) return fail(upd.error());
    ResetOnExit reset(*upd);
    if (step) {
      sqlite3_bind_int64(*upd, 1, *step);
    } else {
      sqlite3_bind_null(*upd, 1);
    }
    BindText(*upd, 2, key);
    int rc = sqlite3_step(*upd);
    if (rc != SQLITE_DONE) return fail(SqlError(rc, "reserve (update)"));
    if (sqlite3_changes(db_) == 0) {
      return fail(MakeError(ErrorCode::kUnknownKey, "no such key"));
    }
  }

  int64_t max_id = 0;
  int64_t table_step = 0;
  {
    auto sel = Stmt(kReserveSelect, "reserve (select)");
    if (!sel.ok()) return fail(sel.error());
    ResetOnExit reset(*sel);
    BindText(*sel, 1, key);
    int rc = sqlite3_step(*sel);
    if (rc != SQLITE_ROW) {
      if (rc == SQLITE_DONE) {
        return fail(MakeError(ErrorCode::kInternal, "sqlite reserve (select): row vanished"));
      }
      return fail(SqlError(rc, "reserve (select)"));
    }
    // SQLite silently turns an overflowing integer sum into a REAL.
    if (sqlite3_column_type(*sel, 0) != SQLITE_INTEGER) {
      return fail(MakeError(ErrorCode::kInternal, "sqlite reserve: max_id overflow"));
    }
    max_id = sqlite3_column_int64(*sel, 0);
    table_step = sqlite3_column_int64(*sel, 1);
  }

  st = ExecLocked(kCommit, "reserve (commit)");
  if (!st.ok()) return fail(st.error());

  const int64_t by = step.value_or(table_step);
  return ReservedSegment{max_id - by, max_id - 1, table_step};
}

Result<KeyRow> SqliteStore::SelectOneLocked(std::string_view key, const char* op) {
  auto s = Stmt(kSelectOne, op);
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, key);
  int rc = sqlite3_step(*s);
  if (rc == SQLITE_DONE) return MakeError(ErrorCode::kUnknownKey, "no such key");
  if (rc != SQLITE_ROW) return SqlError(rc, op);
  return ReadRow(*s);
}

Result<KeyRow> SqliteStore::CreateKey(std::string_view key, int64_t step,
                                      std::string_view description) {
  std::lock_guard lock(mu_);
  {
    auto s = Stmt(kInsert, "create key");
    if (!s.ok()) return s.error();
    ResetOnExit reset(*s);
    BindText(*s, 1, key);
    sqlite3_bind_int64(*s, 2, step);
    BindText(*s, 3, description);
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
      return MakeError(ErrorCode::kKeyExists, "key exists");
    }
    if (rc != SQLITE_DONE) return SqlError(rc, "create key");
  }
  return SelectOneLocked(key, "create key (select)");
}

Result<KeyRow> SqliteStore::GetKey(std::string_view key) {
  std::lock_guard lock(mu_);
  return SelectOneLocked(key, "get key");
}

Result<std::vector<KeyRow>> SqliteStore::ListKeys(std::string_view after, size_t limit) {
  std::lock_guard lock(mu_);
  auto s = Stmt(kList, "list keys");
  if (!s.ok()) return s.error();
  ResetOnExit reset(*s);
  BindText(*s, 1, after);
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  sqlite3_bind_int64(*s, 2, static_cast<int64_t>(limit < max ? limit : max));
  std::vector<KeyRow> out;
  for (;;) {
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqlError(rc, "list keys");
    out.push_back(ReadRow(*s));
  }
  return out;
}

Result<KeyRow> SqliteStore::SetStep(std::string_view key, int64_t step) {
  std::lock_guard lock(mu_);
  {
    auto s = Stmt(kSetStep, "set step");
    if (!s.ok()) return s.error();
    ResetOnExit reset(*s);
    sqlite3_bind_int64(*s, 1, step);
    BindText(*s, 2, key);
    int rc = sqlite3_step(*s);
    if (rc != SQLITE_DONE) return SqlError(rc, "set step");
    if (sqlite3_changes(db_) == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");
  }
  return SelectOneLocked(key, "set step (select)");
}

Status SqliteStore::Ping() {
  std::lock_guard lock(mu_);
  return ExecLocked(kPing, "ping");
}

}  // namespace seqd
