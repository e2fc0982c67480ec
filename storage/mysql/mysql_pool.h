// The Connector/C++ plumbing the MySQL stores share: options, the driver, a
// lazily filled connection pool, and Run(), which maps exceptions to Errors
// and retries a transaction after a lost connection or a conflict; and
// statements with their parameters set by type, read into values, alone in
// a transaction (MysqlPool::Execute, QueryRows, QueryInt64).
//
// Connections: at most `pool_size` (minimum 1), opened on demand (the
// constructor never connects); a caller waits for a free one.
//
// Hosts: `hosts` lists the servers of one database (a Galera cluster's
// nodes). A new connection goes to the host that last took one; if it
// cannot be reached, to the next in the list (MysqlHostOrder). A host whose
// connection was lost, or that refused one, is tried last until a
// connection to it succeeds again, so a connection that fails is replaced
// by one to the next healthy host, without a restart. A Galera node
// (wsrep_on) must be ready and Synced (a donor or joiner only when no
// host is Synced); its sessions get wsrep_sync_wait (default 1: reads wait
// until the node has applied every transaction the cluster committed before
// them, so a read after a failover sees what was acknowledged through
// another node). One pool may
// serve several stores: each Run() names its store's MysqlSession (statement
// table, duplicate-key code), and each connection keeps its own prepared
// statements per session. Every connection is opened with connect timeout
// `connect_timeout_s`, read/write timeouts `rw_timeout_s`, no
// auto-reconnect, utf8mb4, CLIENT_FOUND_ROWS, READ COMMITTED, time zone
// UTC, then autocommit off.
//
// Failures: every sql::SQLException is turned into an Error:
// kStoreUnavailable for connection problems (including a Galera node out
// of the primary component, 1047), lock timeouts, deadlocks and read-only
// servers, the owner's code for a duplicate key (1062) if it set
// one, kInternal otherwise. Messages carry the MySQL error code and never the
// password. Any failure to connect is kStoreUnavailable.
//
// Commits: MysqlConn::Commit() reports every failed COMMIT (Connector/C++
// 1.1.12's own commit() does not), classified as a CommitFailure and counted
// in ProcessStoreStats(). A COMMIT whose connection died has an UNKNOWN
// outcome: the body must be safe to run again (it re-reads what committed) or
// clear `retryable`.
//
// Retries, all within `retry_budget_ms` of the call's start:
// - a lost connection (at any statement or at COMMIT): that connection and
//   the idle ones are discarded and the body runs again on a new connection,
//   at most kMaxLostRetries times, unless the body cleared `retryable`;
// - a conflict (deadlock or Galera certification failure, 1213; lock wait
//   timeout, 1205): the transaction was rolled back, and the body runs again
//   after a jittered exponential backoff, at most kMaxConflictRetries times.
//   A Galera node that rolls a transaction back while it prepares one of its
//   statements reports nothing; on Galera nodes a prepare inside a
//   transaction checks that the transaction is still open after it, and
//   fails with 1213 if not (MysqlConn::PrepareInto). Every other statement
//   reports such a roll-back itself.
//
// Thread safety: MysqlPool is safe to use from any number of threads. A
// MysqlConn belongs to one Run() call at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "storage/store_stats.h"

namespace sql {
class Connection;
class Driver;
class PreparedStatement;
class ResultSet;
class Statement;
}  // namespace sql

namespace seqd {

struct MysqlHost {
  std::string host;  // a name or an address (IPv6 without brackets)
  int port = 3306;
  bool operator==(const MysqlHost&) const = default;
};

struct MysqlOptions {
  // The servers of one database, at least one and at most kMaxHosts, in the
  // order a pool tries them first (the header comment).
  std::vector<MysqlHost> hosts{MysqlHost{"127.0.0.1", 3306}};
  static constexpr size_t kMaxHosts = 16;
  std::string user;
  std::string password;
  std::string database;
  int pool_size = 4;
  int connect_timeout_s = 2;
  int rw_timeout_s = 5;
  // Time after a call's start within which a lost connection or a conflict
  // may still be retried. -1 (unset in the URL): kDefaultRetryBudgetMs, or
  // what the opener gives (seqd: its wait deadline).
  int retry_budget_ms = -1;
  static constexpr int kDefaultRetryBudgetMs = 1000;
  // > 0: how long a statement waits for a row lock (innodb_lock_wait_timeout
  // of each connection); 0: the server's default (50 s).
  int lock_wait_timeout_s = 0;
  // > 0: the server ends a connection whose read-write transaction sits idle
  // this long, releasing its locks, so a frozen process (SIGSTOP, a long
  // pause) cannot block others' writes of its rows for longer (MariaDB's
  // idle_write_transaction_timeout; MySQL has none and ignores it).
  // 0: never.
  int idle_txn_timeout_s = 0;
  // On a Galera node: the session's wsrep_sync_wait (0..15, a bit mask of
  // the statements that wait for the node to catch up with the cluster);
  // -1: 1 (reads). Elsewhere ignored.
  int wsrep_sync_wait = -1;
  // Sessions at REPEATABLE READ instead of READ COMMITTED: every statement
  // of a transaction reads one snapshot, and every Run ends its transaction
  // (committed, or rolled back however it ends), so each call takes a
  // snapshot of its own. For a pool of reads only (the store group
  // guard's, storage/mysql/mysql_shard_guard.h); the stores' writes are
  // made for READ COMMITTED.
  bool snapshot_reads = false;
  // TLS to the server (URL: ssl-mode, ssl-ca, ssl-cert, ssl-key).
  // kDefault: the client library's default (no TLS unless the server asks).
  enum class SslMode { kDefault, kDisabled, kPreferred, kRequired, kVerifyCa, kVerifyIdentity };
  SslMode ssl_mode = SslMode::kDefault;
  std::string ssl_ca;    // CA file that signed the server's certificate
  std::string ssl_cert;  // client certificate (with ssl_key)
  std::string ssl_key;
};

// "host:port", an IPv6 host in brackets (mysql_url.cc).
std::string HostPort(const MysqlHost& host);

// "user@host:port/database" (HostPort; several hosts joined by ','), safe
// to log.
std::string DescribeMysql(const MysqlOptions& options);

// The order in which a pool tries `failed.size()` hosts for a new
// connection: from `preferred` (the last host that took one) round the
// list, skipping failed ones; then the failed ones, the earliest failure
// first. failed[i] is 0 for a host not failed since it last worked, else
// a number that grows with each failure (a host that just failed is tried
// last). REQUIRES: preferred < failed.size().
std::vector<size_t> MysqlHostOrder(size_t preferred, std::span<const uint64_t> failed);

// `n` copies of `item` joined by `separator` (RepeatSql("?", 3) is "?,?,?"):
// the repeated part of a statement whose text depends on a count.
std::string RepeatSql(std::string_view item, size_t n, std::string_view separator = ",");

// Appends `bytes` to `out` as a hex literal (X'...'): any bytes, no
// escaping rules, whatever the sql_mode. A binary string, stored as it is:
// for BLOBs and columns whose character set is known (the stores' own
// tables are utf8mb4).
void AppendHexLiteral(std::string& out, std::string_view bytes);
// Appends UTF-8 `text` to `out` as a utf8mb4 literal (_utf8mb4 X'...'):
// the server converts it to the column's character set, as it does a bound
// parameter (a Leaf user's leaf_alloc may be latin1 or utf8).
void AppendUtf8Literal(std::string& out, std::string_view text);

// Sets parameter `i` (from 1) of `s` by the value's type: a string as text,
// an int64_t as BIGINT, an int as INT, an empty optional as NULL.
void SetParam(sql::PreparedStatement& s, unsigned i, std::string_view value);
void SetParam(sql::PreparedStatement& s, unsigned i, int64_t value);
void SetParam(sql::PreparedStatement& s, unsigned i, int value);
void SetParam(sql::PreparedStatement& s, unsigned i, const std::optional<int64_t>& value);
// Sets the parameters of `s`, from 1 on, to `params` in order.
template <typename... Params>
sql::PreparedStatement& SetParams(sql::PreparedStatement& s, const Params&... params) {
  unsigned i = 0;
  (SetParam(s, ++i, params), ...);
  return s;
}

// Runs `s`, an INSERT, UPDATE or DELETE: the rows it matched (the pool's
// connections set CLIENT_FOUND_ROWS).
int ExecuteUpdate(sql::PreparedStatement& s);
// Runs query `s`: the first column of its first row as a BIGINT; nullopt
// if it returns no row.
std::optional<int64_t> QueryFirstInt64(sql::PreparedStatement& s);
// Runs query `s` and hands each row to `row`, in order.
void ForEachRow(sql::PreparedStatement& s, const std::function<void(sql::ResultSet&)>& row);

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
  // Error code for a duplicate key (1062) escaping a call; unset: kInternal.
  std::optional<ErrorCode> duplicate_key;
};

// One connection and its prepared statements, per session.
struct MysqlConn {
  MysqlConn();
  ~MysqlConn();
  MysqlConn(const MysqlConn&) = delete;
  MysqlConn& operator=(const MysqlConn&) = delete;

  // Statement `id` of the current session's table, prepared on first use,
  // parameters cleared. Marks a transaction open.
  sql::PreparedStatement& Stmt(int id);
  // Stmt(id) with its parameters set to `params` (SetParams).
  template <typename... Params>
  sql::PreparedStatement& Stmt(int id, const Params&... params) {
    return SetParams(Stmt(id), params...);
  }
  // Stmt(id, params...) run: its matched rows (ExecuteUpdate), its first
  // row's first column (QueryFirstInt64).
  template <typename... Params>
  int Execute(int id, const Params&... params) {
    return ExecuteUpdate(Stmt(id, params...));
  }
  template <typename... Params>
  std::optional<int64_t> QueryInt64(int id, const Params&... params) {
    return QueryFirstInt64(Stmt(id, params...));
  }
  // Every row, each read by `read(sql::ResultSet&)`.
  template <typename Read, typename... Params>
  auto QueryRows(int id, Read read, const Params&... params) {
    std::vector<std::invoke_result_t<Read&, sql::ResultSet&>> rows;
    ForEachRow(Stmt(id, params...), [&](sql::ResultSet& rs) { rows.push_back(read(rs)); });
    return rows;
  }
  // The first row, read by `read(sql::ResultSet&)`; nullopt if there is none.
  template <typename Read, typename... Params>
  auto QueryRow(int id, Read read, const Params&... params) {
    std::optional<std::invoke_result_t<Read&, sql::ResultSet&>> row;
    ForEachRow(Stmt(id, params...), [&](sql::ResultSet& rs) {
      if (!row) row = read(rs);
    });
    return row;
  }
  // The statement session->list_sql(kind, n), likewise.
  sql::PreparedStatement& List(int kind, size_t n);
  template <typename... Params>
  sql::PreparedStatement& List(int kind, size_t n, const Params&... params) {
    return SetParams(List(kind, n), params...);
  }
  // The same statements, prepared on first use, parameters as they are;
  // no transaction (warming a connection). On a Galera node, a prepare
  // inside a transaction that the node rolled back meanwhile (PrepareInto)
  // throws sql::SQLException 1213, a conflict: MysqlPool::Run runs the
  // body again.
  sql::PreparedStatement& Prepare(int id);
  sql::PreparedStatement& PrepareList(int kind, size_t n);
  // Commits and marks the transaction closed. Throws sql::SQLException on
  // ANY failure, after setting `commit_failure` and counting it.
  void Commit();
  // Rolls back and marks the transaction closed; throws on failure, after
  // marking the connection `broken`.
  void Rollback();
  // Best effort, if a statement ran since the last commit/rollback; a
  // failure marks the connection `broken`.
  void RollbackQuietly() noexcept;
  // True if, after an exception with this code, the connection is unusable.
  bool LostAfter(int code) noexcept;
  // True if the last Commit() failed with an unknown outcome.
  bool CommitOutcomeUnknown() const { return commit_failure && OutcomeUnknown(*commit_failure); }
  // A plain statement for text SQL (created on first use).
  sql::Statement& Plain();
  // Text SQL that writes, its values in the text (AppendHexLiteral): runs
  // it in the transaction (marks it open) and returns the affected-rows
  // count. For statements of many rows, whose values bound one by one to a
  // prepared statement cost more CPU than the server's parsing of the text.
  int Update(const std::string& sql);
  // Sets how long this session's statements wait for a row lock
  // (innodb_lock_wait_timeout, whole seconds; 0: not at all), or, if unset,
  // back to the connection's own (MysqlOptions::lock_wait_timeout_s, else
  // the server's default). Runs a statement only when the value changes.
  // MysqlPool::Run calls it before each body.
  void UseLockWait(std::optional<int> seconds);

  // Prepares `sql` into `slot`. On a Galera node with a transaction open,
  // checks that it still is once the statement is prepared (one round trip
  // before and one after; none elsewhere): a conflicting commit of another
  // node applied meanwhile rolls it back without any error. Throws
  // sql::SQLException (1213 for that roll-back; `slot` keeps the statement).
  void PrepareInto(std::unique_ptr<sql::PreparedStatement>& slot, const std::string& sql);

  struct Prepared {
    std::vector<std::unique_ptr<sql::PreparedStatement>> stmts;  // by id
    std::map<std::pair<int, size_t>, std::unique_ptr<sql::PreparedStatement>> lists;
  };

  std::unique_ptr<sql::Connection> conn;  // declared first: destroyed last
  const MysqlSession* session = nullptr;  // of the Run() using the connection
  std::unique_ptr<sql::Statement> plain;
  std::map<const MysqlSession*, Prepared> prepared;
  bool in_txn = false;             // a statement ran since the last commit/rollback
  bool broken = false;             // a rollback failed: close instead of pooling
  int rw_timeout_s = 0;            // the connection's read timeout (tells a timeout from a loss)
  int own_lock_wait_s = 0;         // MysqlOptions::lock_wait_timeout_s (0: the server's default)
  std::optional<int> lock_wait_s;  // as UseLockWait() left it; unset: the connection's own
  size_t host = 0;                 // index in MysqlOptions::hosts
  bool galera = false;             // the server is a Galera node (wsrep_on)
  std::optional<CommitFailure> commit_failure;  // of the last Commit(); unset if it succeeded
};

class MysqlPool {
 public:
  // Does not connect.
  explicit MysqlPool(MysqlOptions options);
  ~MysqlPool();

  MysqlPool(const MysqlPool&) = delete;
  MysqlPool& operator=(const MysqlPool&) = delete;

  const MysqlOptions& options() const { return options_; }

  static constexpr int kMaxLostRetries = 2;
  static constexpr int kMaxConflictRetries = 6;

  // Runs fn(MysqlConn&) -> Result<T>, or fn(MysqlConn&, bool& retryable)
  // -> Result<T>, on a pooled connection. An exception becomes an Error
  // naming "mysql `op`"; lost connections and conflicts are retried as the
  // header comment says (a lost one only while fn left `retryable` set). A
  // transaction fn leaves open is rolled back. fn may run several times:
  // each run must start from scratch.
  // `session` (a static table) is the calling store's. fn's statements wait
  // `lock_wait_s` for a row lock (MysqlConn::UseLockWait; unset: the
  // connection's own wait).
  template <typename T, typename Fn>
  Result<T> Run(const MysqlSession& session, const char* op, Fn&& fn,
                std::optional<int> lock_wait_s = std::nullopt) {
    std::optional<Result<T>> out;
    Status st = RunBody(
        session, op,
        [&](MysqlConn& c, bool& retryable) {
          if constexpr (std::is_invocable_v<Fn&, MysqlConn&, bool&>) {
            out.emplace(fn(c, retryable));
          } else {
            (void)retryable;
            out.emplace(fn(c));
          }
        },
        lock_wait_s);
    if (!st.ok()) return st.error();
    return std::move(*out);
  }

  // Runs statement `stmt` of `session` (a "SELECT 1") in Run("ping").
  Status Ping(const MysqlSession& session, int stmt);

  // One statement of `session`, an INSERT, UPDATE or DELETE, with `params`,
  // in Run(op), then COMMIT. Its matched rows are not looked at.
  template <typename... Params>
  Status Execute(const MysqlSession& session, const char* op, int stmt, const Params&... params) {
    return Run<Ok>(session, op, [&](MysqlConn& c) -> Result<Ok> {
      c.Execute(stmt, params...);
      c.Commit();
      return Ok{};
    });
  }
  // One query of `session` with `params`, in Run(op), then COMMIT: every
  // row, each read by `read(sql::ResultSet&)`.
  template <typename Read, typename... Params>
  auto QueryRows(const MysqlSession& session, const char* op, int stmt, Read read,
                 const Params&... params) {
    using Rows = std::vector<std::invoke_result_t<Read&, sql::ResultSet&>>;
    return Run<Rows>(session, op, [&](MysqlConn& c) -> Result<Rows> {
      Rows rows = c.QueryRows(stmt, read, params...);
      c.Commit();
      return rows;
    });
  }
  // One query of `session` with `params`, in Run(op), then COMMIT: the
  // first column of its first row, `none` if it returns no row.
  template <typename... Params>
  Result<int64_t> QueryInt64(const MysqlSession& session, const char* op, int stmt, int64_t none,
                             const Params&... params) {
    return Run<int64_t>(session, op, [&](MysqlConn& c) -> Result<int64_t> {
      const int64_t value = c.QueryInt64(stmt, params...).value_or(none);
      c.Commit();
      return value;
    });
  }

  // Runs `prepare` (statements to prepare for `session`) on a connection
  // of its own: one newly opened if the pool has room, else an idle one.
  // Concurrent calls open several. Blocks; errors are the connection's.
  Status Prepare(const MysqlSession& session, const std::function<void(MysqlConn&)>& prepare)
      EXCLUDES(mu_);

 private:
  // One attempt's work; returns normally or throws.
  using Body = std::function<void(MysqlConn&, bool& retryable)>;
  Status RunBody(const MysqlSession& session, const char* op, const Body& body,
                 std::optional<int> lock_wait_s) EXCLUDES(mu_);

  // Takes an idle connection or opens a new one (waiting while `pool_size`
  // are in use). With `fresh`, never returns an already-open connection.
  Result<std::unique_ptr<MysqlConn>> Acquire(bool fresh) EXCLUDES(mu_);
  // Returns a connection to the pool, or closes it if `broken`.
  void Release(std::unique_ptr<MysqlConn> conn, bool broken) EXCLUDES(mu_);
  // Closes all idle connections: after one connection died, they are suspect.
  void DropIdle() EXCLUDES(mu_);
  // A new connection to the first host of MysqlHostOrder that takes one.
  Result<std::unique_ptr<MysqlConn>> Connect() EXCLUDES(mu_);
  // A connection to hosts[host]. With `synced_only`, a Galera node that is
  // ready but not Synced (a donor, a joiner) is refused too; `*not_synced`
  // tells that case from the others.
  Result<std::unique_ptr<MysqlConn>> ConnectTo(size_t host, bool synced_only, bool* not_synced);
  // Moves `host` to the end of the order (a connection to it failed).
  void MarkFailed(size_t host) EXCLUDES(mu_);
  // Connect() for a slot already counted in open_: gives the slot back if
  // it fails.
  Result<std::unique_ptr<MysqlConn>> ConnectCounted() EXCLUDES(mu_);

  const MysqlOptions options_;
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<MysqlConn>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;                  // connections idle, in use, or being opened
  size_t preferred_host_ GUARDED_BY(mu_) = 0;     // the host that last took a connection
  std::vector<uint64_t> failed_ GUARDED_BY(mu_);  // per host, as MysqlHostOrder takes it
  uint64_t failures_ GUARDED_BY(mu_) = 0;         // failures so far (failed_'s clock)
};

}  // namespace seqd
