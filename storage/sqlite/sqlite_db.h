// One SQLite connection as the SQLite stores use it: opened lazily with
// seqd's settings, a cache of prepared statements, error mapping and
// transaction helpers. Shared by SqliteStore and SqliteMessageStore.
//
// Settings: the parent directory is created if missing; the file is opened
// read-write (created if missing) with extended result codes, WAL journal,
// synchronous=FULL and a busy_timeout of 5000 ms.
//
// Errors: SQLite codes meaning the database cannot serve (busy, locked, I/O,
// full, cannot open, corrupt, read-only, ...) map to kStoreUnavailable, the
// others to kInternal; messages read "sqlite OP: DETAIL (code N)".
//
// Thread safety: NOT thread-safe. The connection is opened with
// SQLITE_OPEN_NOMUTEX; the owner serializes every call (the stores hold one
// mutex per instance across each whole operation, transactions included).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace seqd {

class SqliteDb {
 public:
  // `sql` holds the statement texts by id (an owner's enum); it must outlive
  // this object (a static table). Does not touch the file.
  SqliteDb(std::string path, std::span<const char* const> sql);
  // Finalizes the statements and closes the connection.
  ~SqliteDb();

  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }
  // The open connection, or nullptr before Open() succeeded.
  sqlite3* handle() const { return db_; }

  // Opens the file if not yet open (no-op otherwise). kInvalidArgument for
  // an empty path, kStoreUnavailable if it cannot be opened.
  Status Open();

  // The cached prepared statement `id` (prepared on first use, opening the
  // database if needed), reset and with its bindings cleared.
  Result<sqlite3_stmt*> Stmt(int id, const char* op);
  // The connection's last error (or `rc`) as an Error naming `op`.
  Error SqlError(int rc, const char* op) const;
  // Steps statement `id` once; a row or done is success.
  Status Exec(int id, const char* op);
  // Runs `sql` (several statements allowed) with sqlite3_exec, opening the
  // database if needed.
  Status ExecScript(const char* sql, const char* op);
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int Changes() const;

  // BEGIN IMMEDIATE: takes the write lock now, waiting up to busy_timeout.
  Status Begin(const char* op);
  Status Commit(const char* op);
  // If a transaction is open: resets every cached statement and rolls back
  // (best effort; never fails).
  void Rollback();

 private:
  void Close();
  sqlite3_stmt*& Slot(int id) { return stmts_[static_cast<size_t>(id)]; }

  const std::string path_;
  std::vector<const char*> sql_;  // the owner's table, then BEGIN/COMMIT/ROLLBACK
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;  // same indices as sql_
};

// Resets a statement when the scope ends, so no read transaction stays open.
class SqliteResetOnExit {
 public:
  explicit SqliteResetOnExit(sqlite3_stmt* s) : s_(s) {}
  ~SqliteResetOnExit();
  SqliteResetOnExit(const SqliteResetOnExit&) = delete;
  SqliteResetOnExit& operator=(const SqliteResetOnExit&) = delete;

 private:
  sqlite3_stmt* s_;
};

// Binds `v` as TEXT (copied).
int SqliteBindText(sqlite3_stmt* s, int i, std::string_view v);

}  // namespace seqd
