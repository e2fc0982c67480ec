// The Connector/C++ plumbing the MySQL stores share: options, the driver, a
// lazily filled connection pool, and Run(), which maps exceptions to Errors
// and retries once on a new connection after a lost one.
//
// Connections: at most `pool_size` (minimum 1), opened on demand (the
// constructor never connects); a caller waits for a free one. Every
// connection is opened with connect timeout `connect_timeout_s`, read/write
// timeouts `rw_timeout_s`, no auto-reconnect, utf8mb4, CLIENT_FOUND_ROWS, the
// owner's session statements, then autocommit off. Each keeps its own
// prepared statements.
//
// Failures: every sql::SQLException is turned into an Error:
// kStoreUnavailable for connection problems, lock timeouts, deadlocks and
// read-only servers, the owner's code for a duplicate key (1062) if it set
// one, kInternal otherwise. Messages carry the MySQL error code and never the
// password. When a call fails because its connection is gone, that
// connection and the idle ones are discarded and the call is retried once on
// a new connection (unless the call cleared `retryable`). Any failure to
// connect is kStoreUnavailable.
//
// Thread safety: MysqlPool is safe to use from any number of threads. A
// MysqlConn belongs to one Run() call at a time.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "storage/error.h"

namespace sql {
class Connection;
class Driver;
class PreparedStatement;
}  // namespace sql

namespace seqd {

struct MysqlOptions {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;
  int pool_size = 4;
  int connect_timeout_s = 2;
  int rw_timeout_s = 5;
};

// "user@host:port/database" (IPv6 host in brackets), safe to log.
std::string DescribeMysql(const MysqlOptions& options);

// The Connector/C++ driver, created once for the whole process (its first
// use is not thread-safe; this is). May throw sql::SQLException.
sql::Driver* MysqlDriver();

// What the connections of one store hold and do.
struct MysqlSession {
  // Statement texts by the store's statement id (a static table).
  std::span<const char* const> statements;
  // Text of a statement that depends on a count (IN lists, multi-row
  // INSERT), by the store's own kind; null if the store has none.
  std::string (*list_sql)(int kind, size_t n) = nullptr;
  // Run once on every new connection, before autocommit is turned off.
  std::span<const char* const> setup;
  // Error code for a duplicate key (1062) escaping a call; unset: kInternal.
  std::optional<ErrorCode> duplicate_key;
};

// One connection and its prepared statements.
struct MysqlConn {
  explicit MysqlConn(const MysqlSession& session);
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Statement `id` of the session table, prepared on first use, parameters
  // cleared. Marks a transaction open.
  sql::PreparedStatement& Stmt(int id);
  // The statement session.list_sql(kind, n), likewise.
  sql::PreparedStatement& List(int kind, size_t n);
  // Commits (throws on failure) and marks the transaction closed.
  void Commit();
  // Rolls back (throws on failure) and marks the transaction closed.
  void Rollback();
  // Best effort, if a statement ran since the last commit/rollback; the
  // connection may already be gone.
  void RollbackQuietly() noexcept;
  // True if, after an exception with this code, the connection is unusable.
  bool LostAfter(int code) noexcept;

  std::unique_ptr<sql::Connection> conn;  // declared first: destroyed last
  const MysqlSession& session;
  std::vector<std::unique_ptr<sql::PreparedStatement>> stmts;  // by id
  std::map<std::pair<int, size_t>, std::unique_ptr<sql::PreparedStatement>> lists;
  bool in_txn = false;  // a statement ran since the last commit/rollback
};

class MysqlPool {
 public:
  // Does not connect. `session` must outlive the pool.
  MysqlPool(MysqlOptions options, const MysqlSession& session);
  ~MysqlPool();

  MysqlPool(const MysqlPool&) = delete;
  MysqlPool& operator=(const MysqlPool&) = delete;

  const MysqlOptions& options() const { return options_; }

  // Runs fn(MysqlConn&) -> Result<T>, or fn(MysqlConn&, bool& retryable)
  // -> Result<T>, on a pooled connection. An exception becomes an Error
  // naming "mysql `op`"; after a lost connection fn runs once more on a new
  // connection, unless it cleared `retryable` (e.g. before a COMMIT whose
  // outcome would be unknown). A transaction fn leaves open is rolled back.
  template <typename T, typename Fn>
  Result<T> Run(const char* op, Fn&& fn) {
    std::optional<Result<T>> out;
    Status st = RunBody(op, [&](MysqlConn& c, bool& retryable) {
      if constexpr (std::is_invocable_v<Fn&, MysqlConn&, bool&>) {
        out.emplace(fn(c, retryable));
      } else {
        (void)retryable;
        out.emplace(fn(c));
      }
    });
    if (!st.ok()) return st.error();
    return std::move(*out);
  }

  // Runs session statement `stmt` (a "SELECT 1") in Run("ping").
  Status Ping(int stmt);

 private:
  // One attempt's work; returns normally or throws.
  using Body = std::function<void(MysqlConn&, bool& retryable)>;
  Status RunBody(const char* op, const Body& body);

  // Takes an idle connection or opens a new one (waiting while `pool_size`
  // are in use). With `fresh`, never returns an already-open connection.
  Result<std::unique_ptr<MysqlConn>> Acquire(bool fresh);
  // Returns a connection to the pool, or closes it if `broken`.
  void Release(std::unique_ptr<MysqlConn> conn, bool broken);
  // Closes all idle connections: after one connection died, they are suspect.
  void DropIdle();
  Result<std::unique_ptr<MysqlConn>> Connect();

  const MysqlOptions options_;
  const MysqlSession& session_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<MysqlConn>> idle_;  // guarded by mu_
  int open_ = 0;  // connections idle, in use, or being opened; guarded by mu_
};

}  // namespace seqd
