#include "storage/sqlite/sqlite_db.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

namespace seqd {
namespace {

constexpr int kBusyTimeoutMs = 5000;

// Statements every owner gets, after its own table.
enum TxnStmt { kBegin, kCommit, kRollback, kNumTxnStmts };
constexpr const char* kTxnSql[kNumTxnStmts] = {"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"};

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

}  // namespace

SqliteDb::SqliteDb(std::string path, std::span<const char* const> sql)
    : path_(std::move(path)), sql_(sql.begin(), sql.end()) {
  sql_.insert(sql_.end(), std::begin(kTxnSql), std::end(kTxnSql));
  stmts_.assign(sql_.size(), nullptr);
}

SqliteDb::~SqliteDb() { Close(); }

Status SqliteDb::Open() {
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

  // Once per process, before SQLite initializes: no memory statistics. They
  // take a process-wide mutex on every allocation SQLite makes (several per
  // statement), and nothing here reads them.
  static std::once_flag configured;
  std::call_once(configured, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });

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

  // journal_mode answers with the mode actually in effect. Switching a new
  // file to WAL takes an exclusive lock, and SQLite answers BUSY at once
  // (no busy handler) when another process opens the same new file at that
  // moment: retried for up to the busy timeout.
  std::string mode;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    rc = sqlite3_exec(
        db, "PRAGMA journal_mode=WAL",
        [](void* out, int n, char** vals, char**) {
          if (n > 0 && vals[0] != nullptr) *static_cast<std::string*>(out) = vals[0];
          return 0;
        },
        &mode, nullptr);
    const int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) ||
        std::chrono::steady_clock::now() >= give_up) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (rc != SQLITE_OK) return fail("setting journal_mode=WAL");
  if (mode != "wal" && mode != "memory") return fail("journal_mode is '" + mode + "', not wal");
  rc = sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail("setting synchronous=FULL");

  db_ = db;
  return OkStatus();
}

void SqliteDb::Close() {
  for (auto& s : stmts_) {
    if (s != nullptr) sqlite3_finalize(s);
    s = nullptr;
  }
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Error SqliteDb::SqlError(int rc, const char* op) const {
  std::string msg = std::string("sqlite ") + op + ": ";
  msg += db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  msg += " (code " + std::to_string(rc) + ")";
  return MakeError(IsUnavailable(rc) ? ErrorCode::kStoreUnavailable : ErrorCode::kInternal,
                   std::move(msg));
}

Result<sqlite3_stmt*> SqliteDb::Stmt(int id, const char* op) {
  Status st = Open();
  if (!st.ok()) return st.error();
  sqlite3_stmt*& s = Slot(id);
  if (s == nullptr) {
    int rc = sqlite3_prepare_v3(db_, sql_[static_cast<size_t>(id)], -1, SQLITE_PREPARE_PERSISTENT,
                                &s, nullptr);
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

Status SqliteDb::StepOnce(sqlite3_stmt* s, const char* op) {
  SqliteResetOnExit reset(s);
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(rc, op);
  return OkStatus();
}

Status SqliteDb::StepRows(sqlite3_stmt* s, const char* op,
                          const std::function<bool(sqlite3_stmt*)>& row) {
  SqliteResetOnExit reset(s);
  for (;;) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) return OkStatus();
    if (rc != SQLITE_ROW) return SqlError(rc, op);
    if (!row(s)) return OkStatus();
  }
}

Status SqliteDb::ExecScript(const char* sql, const char* op) {
  Status st = Open();
  if (!st.ok()) return st;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqlError(rc, op);
  return OkStatus();
}

int SqliteDb::Changes() const { return db_ != nullptr ? sqlite3_changes(db_) : 0; }

Status SqliteDb::Begin(const char* op) {
  return Exec(static_cast<int>(sql_.size()) - kNumTxnStmts + kBegin, op);
}

Status SqliteDb::Commit(const char* op) {
  return Exec(static_cast<int>(sql_.size()) - kNumTxnStmts + kCommit, op);
}

void SqliteDb::Rollback() {
  if (db_ == nullptr || sqlite3_get_autocommit(db_)) return;  // no transaction open
  for (auto* s : stmts_) {
    if (s != nullptr) sqlite3_reset(s);
  }
  if (!Exec(static_cast<int>(sql_.size()) - kNumTxnStmts + kRollback, "rollback").ok()) {
    // Last resort: the statement cache may be the problem.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

SqliteTransaction::~SqliteTransaction() {
  if (!committed_) db_.Rollback();
}

Status SqliteTransaction::Begin() { return db_.Begin((op_ + " (begin)").c_str()); }

Status SqliteTransaction::Commit() {
  Status st = db_.Commit((op_ + " (commit)").c_str());
  committed_ = st.ok();
  return st;
}

SqliteResetOnExit::~SqliteResetOnExit() { sqlite3_reset(s_); }

int SqliteBind(sqlite3_stmt* s, int i, std::string_view v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

int SqliteBind(sqlite3_stmt* s, int i, int64_t v) { return sqlite3_bind_int64(s, i, v); }

int SqliteBind(sqlite3_stmt* s, int i, int v) { return sqlite3_bind_int(s, i, v); }

int SqliteBind(sqlite3_stmt* s, int i, const std::optional<int64_t>& v) {
  return v ? sqlite3_bind_int64(s, i, *v) : sqlite3_bind_null(s, i);
}

std::string SqliteColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  if (p == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(p),
                     static_cast<size_t>(sqlite3_column_bytes(s, i)));
}

int64_t SqliteColumnInt64(sqlite3_stmt* s, int i) { return sqlite3_column_int64(s, i); }

}  // namespace seqd
