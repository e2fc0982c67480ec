// One SQLite connection as the SQLite stores use it: opened lazily with
// seqd's settings, a cache of prepared statements, their parameters bound by
// type, their rows read into values, error mapping and write transactions.
// Shared by every SQLite store.
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

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace seqd {

// Binds parameter `i` (from 1) of `s` by the value's type: a string as TEXT
// (copied), an int or int64_t as INTEGER, an empty optional as NULL.
// Returns SQLite's code.
int SqliteBind(sqlite3_stmt* s, int i, std::string_view v);
int SqliteBind(sqlite3_stmt* s, int i, int64_t v);
int SqliteBind(sqlite3_stmt* s, int i, int v);
int SqliteBind(sqlite3_stmt* s, int i, const std::optional<int64_t>& v);

// Column `i` (from 0) of `s`'s current row: as text (empty for NULL), as
// INTEGER.
std::string SqliteColumnText(sqlite3_stmt* s, int i);
int64_t SqliteColumnInt64(sqlite3_stmt* s, int i);

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
  // The same with `params` bound from ?1 on (SqliteBind).
  template <typename... Params>
  Result<sqlite3_stmt*> Stmt(int id, const char* op, const Params&... params) {
    Result<sqlite3_stmt*> s = Stmt(id, op);
    if (s.ok()) {
      int i = 0;
      (SqliteBind(*s, ++i, params), ...);
    }
    return s;
  }
  // The connection's last error (or `rc`) as an Error naming `op`.
  Error SqlError(int rc, const char* op) const;
  // Steps statement `id` with `params` once (an INSERT, UPDATE or DELETE
  // runs to its end); a row or done is success. Changes() then counts the
  // rows it changed.
  template <typename... Params>
  Status Exec(int id, const char* op, const Params&... params) {
    Result<sqlite3_stmt*> s = Stmt(id, op, params...);
    if (!s.ok()) return s.error();
    return StepOnce(*s, op);
  }
  // Hands each row of statement `id` with `params` to `row`, in order,
  // until `row` returns false.
  template <typename... Params>
  Status ForEachRow(int id, const char* op, const std::function<bool(sqlite3_stmt*)>& row,
                    const Params&... params) {
    Result<sqlite3_stmt*> s = Stmt(id, op, params...);
    if (!s.ok()) return s.error();
    return StepRows(*s, op, row);
  }
  // Every row of statement `id` with `params`, each read by `read(stmt)`.
  template <typename Read, typename... Params>
  auto QueryRows(int id, const char* op, Read read, const Params&... params)
      -> Result<std::vector<std::invoke_result_t<Read&, sqlite3_stmt*>>> {
    std::vector<std::invoke_result_t<Read&, sqlite3_stmt*>> rows;
    auto add = [&](sqlite3_stmt* s) {
      rows.push_back(read(s));
      return true;
    };
    if (Status st = ForEachRow(id, op, add, params...); !st.ok()) return st.error();
    return rows;
  }
  // Its first row, read by `read(stmt)`; nullopt if it returns none.
  template <typename Read, typename... Params>
  auto QueryRow(int id, const char* op, Read read, const Params&... params)
      -> Result<std::optional<std::invoke_result_t<Read&, sqlite3_stmt*>>> {
    std::optional<std::invoke_result_t<Read&, sqlite3_stmt*>> row;
    auto first = [&](sqlite3_stmt* s) {
      row = read(s);
      return false;
    };
    if (Status st = ForEachRow(id, op, first, params...); !st.ok()) return st.error();
    return row;
  }
  // Its first row's first column as INTEGER; nullopt if it returns no row.
  template <typename... Params>
  Result<std::optional<int64_t>> QueryInt64(int id, const char* op, const Params&... params) {
    return QueryRow(
        id, op, [](sqlite3_stmt* s) { return SqliteColumnInt64(s, 0); }, params...);
  }
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
  // Steps `s` once, then resets it: a row or done is success.
  Status StepOnce(sqlite3_stmt* s, const char* op);
  // Steps `s` through its rows while `row` returns true, then resets it.
  Status StepRows(sqlite3_stmt* s, const char* op, const std::function<bool(sqlite3_stmt*)>& row);

  const std::string path_;
  std::vector<const char*> sql_;  // the owner's table, then BEGIN/COMMIT/ROLLBACK
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;  // same indices as sql_
};

// A write transaction (BEGIN IMMEDIATE, taking the write lock now) on a
// SqliteDb: rolled back when it goes out of scope without a successful
// Commit(). `op` names its BEGIN and COMMIT in errors ("op (begin)").
// Thread safety: as the SqliteDb's owner serializes its calls.
class SqliteTransaction {
 public:
  SqliteTransaction(SqliteDb& db, std::string op) : db_(db), op_(std::move(op)) {}
  ~SqliteTransaction();
  SqliteTransaction(const SqliteTransaction&) = delete;
  SqliteTransaction& operator=(const SqliteTransaction&) = delete;

  Status Begin();
  Status Commit();

 private:
  SqliteDb& db_;
  const std::string op_;
  bool committed_ = false;
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

}  // namespace seqd
