// One pool's lifecycle over shared state: hosts, connect, statements,
// checked COMMIT.
#include "storage/mysql/mysql_pool.h"

#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "storage/mysql/mysql_errors.h"

namespace seqd {

std::string RepeatSql(std::string_view item, size_t n, std::string_view separator) {
  std::string out;
  out.reserve(n * (item.size() + separator.size()));
  for (size_t i = 0; i < n; ++i) {
    if (i) out += separator;
    out += item;
  }
  return out;
}

void AppendHexLiteral(std::string& out, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += "X'";
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  out += '\'';
}

void AppendUtf8Literal(std::string& out, std::string_view text) {
  out += "_utf8mb4 ";
  AppendHexLiteral(out, text);
}

std::vector<size_t> MysqlHostOrder(size_t preferred, std::span<const uint64_t> failed) {
  const size_t n = failed.size();
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (preferred + k) % n;
    if (failed[i] == 0) order.push_back(i);
  }
  const size_t healthy = order.size();
  for (size_t i = 0; i < n; ++i) {
    if (failed[i] != 0) order.push_back(i);
  }
  std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(healthy), order.end(),
                   [&](size_t a, size_t b) { return failed[a] < failed[b]; });
  return order;
}

void SetParam(sql::PreparedStatement& s, unsigned i, std::string_view value) {
  s.setString(i, sql::SQLString(value.data(), value.size()));
}

void SetParam(sql::PreparedStatement& s, unsigned i, int64_t value) { s.setInt64(i, value); }

void SetParam(sql::PreparedStatement& s, unsigned i, int value) { s.setInt(i, value); }

void SetParam(sql::PreparedStatement& s, unsigned i, const std::optional<int64_t>& value) {
  if (value) {
    s.setInt64(i, *value);
  } else {
    s.setNull(i, 0);
  }
}

int ExecuteUpdate(sql::PreparedStatement& s) { return s.executeUpdate(); }

std::optional<int64_t> QueryFirstInt64(sql::PreparedStatement& s) {
  std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
  if (!rs->next()) return std::nullopt;
  return rs->getInt64(1);
}

void ForEachRow(sql::PreparedStatement& s, const std::function<void(sql::ResultSet&)>& row) {
  std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
  while (rs->next()) row(*rs);
}

sql::Driver* MysqlDriver() {
  // get_driver_instance() is not thread-safe on first use; a function-local
  // static is initialized once, whichever store (or test) asks first.
  static sql::Driver* const driver = get_driver_instance();
  return driver;
}

// ---------------------------------------------------------------- MysqlConn

MysqlConn::MysqlConn() = default;

MysqlConn::~MysqlConn() {
  // Statements before their connection.
  prepared.clear();
  plain.reset();
}

namespace {

// Whether the session has a transaction open on the server (one started
// by a statement that used a table). Throws sql::SQLException.
bool ServerInTransaction(sql::Statement& plain) {
  std::unique_ptr<sql::ResultSet> rs(plain.executeQuery("SELECT @@in_transaction"));
  return rs->next() && rs->getInt(1) != 0;
}

}  // namespace

void MysqlConn::PrepareInto(std::unique_ptr<sql::PreparedStatement>& slot, const std::string& sql) {
  // A Galera node that applies another node's conflicting write set while
  // it prepares a statement rolls the open transaction back, and the
  // prepare still succeeds: no statement reports it, and the next one runs
  // in a new transaction. So a transaction open before the prepare must
  // still be open after it. Nothing to check elsewhere: every other
  // statement reports such a roll-back (1213).
  const bool watch = galera && ServerInTransaction(Plain());
  slot.reset(conn->prepareStatement(sql));
  if (watch && !ServerInTransaction(Plain())) {
    ProcessStoreStats().silent_rollbacks.fetch_add(1, std::memory_order_relaxed);
    throw sql::SQLException(
        "the transaction was rolled back by a conflicting commit of another Galera node "
        "while a statement was prepared",
        "40001", kMysqlErrDeadlock);
  }
}

sql::PreparedStatement& MysqlConn::Prepare(int id) {
  Prepared& p = prepared[session];
  if (p.stmts.empty()) p.stmts.resize(session->statements.size());
  auto& s = p.stmts[static_cast<size_t>(id)];
  if (!s) PrepareInto(s, session->statements[static_cast<size_t>(id)]);
  return *s;
}

sql::PreparedStatement& MysqlConn::PrepareList(int kind, size_t n) {
  auto& s = prepared[session].lists[{kind, n}];
  if (!s) PrepareInto(s, session->list_sql(kind, n));
  return *s;
}

sql::PreparedStatement& MysqlConn::Stmt(int id) {
  sql::PreparedStatement& s = Prepare(id);
  s.clearParameters();
  in_txn = true;
  return s;
}

sql::PreparedStatement& MysqlConn::List(int kind, size_t n) {
  sql::PreparedStatement& s = PrepareList(kind, n);
  s.clearParameters();
  in_txn = true;
  return s;
}

sql::Statement& MysqlConn::Plain() {
  if (!plain) plain.reset(conn->createStatement());
  return *plain;
}

int MysqlConn::Update(const std::string& sql) {
  in_txn = true;
  return Plain().executeUpdate(sql);
}

void MysqlConn::Commit() {
  // Not conn->commit(): Connector/C++ 1.1.12 calls mysql_commit() and ignores
  // its result, so a COMMIT that failed (certification conflict, lost
  // connection, read timeout) would look committed. A COMMIT statement
  // reports every failure as an exception.
  commit_failure.reset();
  const auto start = std::chrono::steady_clock::now();
  try {
    Plain().execute("COMMIT");
  } catch (const sql::SQLException& e) {
    in_txn = false;
    const int code = e.getErrorCode();
    CommitFailure why = CommitFailure::kOther;
    if (MysqlConflict(code)) {
      why = CommitFailure::kConflict;
    } else if (MysqlNoServerAnswer(code)) {
      const auto waited = std::chrono::steady_clock::now() - start;
      why = rw_timeout_s > 0 && waited >= std::chrono::milliseconds(rw_timeout_s * 900)
                ? CommitFailure::kTimeout
                : CommitFailure::kLost;
    }
    commit_failure = why;
    ProcessStoreStats().CommitFailed(why);
    throw;
  }
  in_txn = false;
}

void MysqlConn::Rollback() {
  // A statement for the same reason as Commit(): conn->rollback() ignores
  // mysql_rollback()'s result.
  in_txn = false;
  try {
    Plain().execute("ROLLBACK");
  } catch (...) {
    broken = true;
    throw;
  }
}

void MysqlConn::RollbackQuietly() noexcept {
  if (!in_txn) return;
  try {
    Rollback();
  } catch (...) {
  }
}

void MysqlConn::UseLockWait(std::optional<int> seconds) {
  if (seconds == lock_wait_s) return;
  const int s = seconds.value_or(own_lock_wait_s);  // own 0: the server's default
  Plain().execute("SET SESSION innodb_lock_wait_timeout = " +
                  (seconds || s > 0 ? std::to_string(s) : std::string("DEFAULT")));
  lock_wait_s = seconds;
}

bool MysqlConn::LostAfter(int code) noexcept {
  if (MysqlConnectionLost(code)) return true;
  try {
    if (conn->isClosed()) return true;
    // Server-side errors (1000..1999, 3000+) prove the server answered;
    // client-side ones (0, 2xxx) need a round trip to tell.
    if (code == 0 || (code >= 2000 && code < 3000)) return !conn->isValid();
    return false;
  } catch (...) {
    return true;
  }
}

namespace {

// Connector/C++'s OPT_SSL_MODE for `mode`; nullopt for kDefault (the
// library's own default).
std::optional<int> ConnectorSslMode(MysqlOptions::SslMode mode) {
  using Ssl = MysqlOptions::SslMode;
  static constexpr std::pair<Ssl, sql::ssl_mode> kModes[] = {
      {Ssl::kDisabled, sql::SSL_MODE_DISABLED},
      {Ssl::kPreferred, sql::SSL_MODE_PREFERRED},
      {Ssl::kRequired, sql::SSL_MODE_REQUIRED},
      {Ssl::kVerifyCa, sql::SSL_MODE_VERIFY_CA},
      {Ssl::kVerifyIdentity, sql::SSL_MODE_VERIFY_IDENTITY},
  };
  for (const auto& [ours, theirs] : kModes) {
    if (ours == mode) return static_cast<int>(theirs);
  }
  return std::nullopt;
}

// On a Galera node (wsrep_on): true if the node serves (wsrep_ready, and
// Synced unless `!synced_only`), after setting the session's
// wsrep_sync_wait (-1: 1). Elsewhere (MySQL: no such variable; MariaDB
// without Galera: wsrep_on off) true with nothing set. Sets c.galera.
// Throws sql::SQLException.
bool GaleraReady(MysqlConn& c, int sync_wait, bool synced_only, bool* not_synced) {
  bool wsrep_on = false;
  try {
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery("SELECT @@wsrep_on"));
    wsrep_on = rs->next() && rs->getInt(1) != 0;
  } catch (const sql::SQLException& e) {
    if (e.getErrorCode() != kMysqlErrUnknownSystemVariable) throw;  // MySQL: no Galera
  }
  c.galera = wsrep_on;
  if (!wsrep_on) return true;
  bool ready = false;
  int state = 0;
  {
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(
        "SHOW STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')"));
    while (rs->next()) {
      const std::string name = rs->getString(1).asStdString();
      const std::string value = rs->getString(2).asStdString();
      if (name == "wsrep_ready") ready = value == "ON";
      if (name == "wsrep_local_state") state = std::atoi(value.c_str());
    }
  }
  constexpr int kSynced = 4;
  if (!ready) return false;
  if (state != kSynced && synced_only) {
    *not_synced = true;
    return false;
  }
  c.Plain().execute("SET SESSION wsrep_sync_wait = " +
                    std::to_string(sync_wait >= 0 ? sync_wait : 1));
  return true;
}

}  // namespace

// ---------------------------------------------------------------- MysqlPool

MysqlPool::MysqlPool(MysqlOptions options)
    : options_(std::move(options)), failed_(options_.hosts.size(), 0) {}

MysqlPool::~MysqlPool() = default;

Result<std::unique_ptr<MysqlConn>> MysqlPool::Connect() {
  if (options_.hosts.empty()) {
    return MakeError(ErrorCode::kStoreUnavailable, "mysql connect: no host");
  }
  std::vector<size_t> order;
  {
    MutexLock lock(mu_);
    order = MysqlHostOrder(preferred_host_, failed_);
  }
  // First only Synced nodes; then, if none took it, a ready Galera node that
  // is not (a donor, a joiner) rather than none.
  std::vector<size_t> not_synced;
  std::optional<Error> first_error;
  std::string every_error;  // each host's own failure, for the log
  for (const bool synced_only : {true, false}) {
    for (const size_t host : synced_only ? order : not_synced) {
      bool unsynced = false;
      auto c = ConnectTo(host, synced_only, &unsynced);
      if (c.ok()) {
        MutexLock lock(mu_);
        preferred_host_ = host;
        failed_[host] = 0;
        return c;
      }
      if (unsynced) {
        not_synced.push_back(host);
      } else {
        MarkFailed(host);
      }
      if (!first_error) first_error = c.error();
      if (!unsynced || !synced_only) every_error += "; " + c.error().message;
    }
  }
  if (order.size() > 1) {
    // Each host's cause (unknown host, refused, too many connections) logged.
    first_error->message =
        "no host of " + std::to_string(order.size()) + " took a connection" + every_error;
  }
  return *first_error;
}

void MysqlPool::MarkFailed(size_t host) {
  MutexLock lock(mu_);
  if (host < failed_.size()) failed_[host] = ++failures_;
}

Result<std::unique_ptr<MysqlConn>> MysqlPool::ConnectTo(size_t host, bool synced_only,
                                                        bool* not_synced) {
  *not_synced = false;
  MysqlOptions one = options_;
  one.hosts = {options_.hosts[host]};
  const std::string where = "mysql connect to " + DescribeMysql(one);
  try {
    sql::ConnectOptionsMap props;
    props["hostName"] = "tcp://" + HostPort(options_.hosts[host]);
    props["userName"] = options_.user;
    props["password"] = options_.password;
    props["schema"] = options_.database;
    props["OPT_CONNECT_TIMEOUT"] = options_.connect_timeout_s;
    props["OPT_READ_TIMEOUT"] = options_.rw_timeout_s;
    props["OPT_WRITE_TIMEOUT"] = options_.rw_timeout_s;
    props["OPT_RECONNECT"] = false;
    props["OPT_CHARSET_NAME"] = "utf8mb4";
    // Affected rows = matched rows: a no-op UPDATE (SetStep to the same step)
    // proves the row exists; CreateAndReserve counts padding rows as 1 each.
    props["CLIENT_FOUND_ROWS"] = true;
    if (!options_.ssl_ca.empty()) props["sslCA"] = options_.ssl_ca;
    if (!options_.ssl_cert.empty()) props["sslCert"] = options_.ssl_cert;
    if (!options_.ssl_key.empty()) props["sslKey"] = options_.ssl_key;
    if (auto mode = ConnectorSslMode(options_.ssl_mode)) props["OPT_SSL_MODE"] = *mode;
    auto c = std::make_unique<MysqlConn>();
    c->conn.reset(MysqlDriver()->connect(props));
    if (!c->conn) return MakeError(ErrorCode::kStoreUnavailable, where + ": no connection");
    // READ COMMITTED: no gap locks between the message writers; every
    // store's transactions are correct under it (conditional UPDATEs read
    // the latest committed row). UTC: the lease store's time arithmetic.
    c->Plain().execute(options_.snapshot_reads
                           ? "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
                           : "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    c->Plain().execute("SET SESSION time_zone = '+00:00'");
    // Strict: a value a column cannot hold (a key too long for an older
    // table, characters its charset lacks) fails its statement, never
    // stored cut short or as '?' (MariaDB and MySQL are strict by default;
    // a server configured otherwise is made so for seqd's sessions).
    c->Plain().execute(
        "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), "
        "'STRICT_TRANS_TABLES')");
    if (options_.lock_wait_timeout_s > 0) {
      c->Plain().execute("SET SESSION innodb_lock_wait_timeout = " +
                         std::to_string(options_.lock_wait_timeout_s));
    }
    if (options_.idle_txn_timeout_s > 0) {
      try {
        c->Plain().execute("SET SESSION idle_write_transaction_timeout = " +
                           std::to_string(options_.idle_txn_timeout_s));
      } catch (const sql::SQLException& e) {
        if (e.getErrorCode() != kMysqlErrUnknownSystemVariable) throw;  // MySQL: not there
      }
    }
    if (!GaleraReady(*c, options_.wsrep_sync_wait, synced_only, not_synced)) {
      return MakeError(ErrorCode::kStoreUnavailable,
                       where + (*not_synced ? ": Galera node not Synced (a donor or a joiner)"
                                            : ": Galera node not ready (not in the primary "
                                              "component)"));
    }
    c->conn->setAutoCommit(false);
    // setAutoCommit() ignores mysql_autocommit()'s result too: a connection
    // left in autocommit would commit each statement on its own.
    c->Plain().execute("SET SESSION autocommit = 0");
    c->rw_timeout_s = options_.rw_timeout_s;
    c->own_lock_wait_s = options_.lock_wait_timeout_s;
    c->host = host;
    return c;
  } catch (const sql::SQLException& e) {
    // Any failure to connect (refused, timeout, access denied, unknown
    // database, too many connections) means the store is unavailable.
    return MakeError(ErrorCode::kStoreUnavailable, where + ": " + e.what() + MysqlCodeSuffix(e));
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kStoreUnavailable, where + ": " + e.what());
  }
}

Result<std::unique_ptr<MysqlConn>> MysqlPool::Acquire(bool fresh) {
  std::unique_ptr<MysqlConn> stale;  // closed outside the lock
  {
    MutexLock lock(mu_);
    const int cap = options_.pool_size > 0 ? options_.pool_size : 1;
    cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return !idle_.empty() || open_ < cap; });
    if (!idle_.empty()) {
      std::unique_ptr<MysqlConn> c = std::move(idle_.back());
      idle_.pop_back();
      if (!fresh) return c;
      stale = std::move(c);  // reuse its slot for a new connection
    } else {
      ++open_;
    }
  }
  stale.reset();
  return ConnectCounted();
}

Result<std::unique_ptr<MysqlConn>> MysqlPool::ConnectCounted() {
  auto c = Connect();
  if (!c.ok()) {
    {
      MutexLock lock(mu_);
      --open_;
    }
    cv_.notify_one();
  }
  return c;
}

void MysqlPool::Release(std::unique_ptr<MysqlConn> conn, bool broken) {
  {
    MutexLock lock(mu_);
    if (!broken) {
      idle_.push_back(std::move(conn));
    } else {
      --open_;
    }
  }
  cv_.notify_one();
  conn.reset();  // a broken connection is closed outside the lock
}

void MysqlPool::DropIdle() {
  std::vector<std::unique_ptr<MysqlConn>> dropped;
  {
    MutexLock lock(mu_);
    dropped.swap(idle_);
    open_ -= static_cast<int>(dropped.size());
  }
  cv_.notify_all();
}

namespace {

// Full jitter over an exponential backoff: 2, 4, 8 ... 64 ms, uniform in
// [half, whole].
std::chrono::microseconds ConflictBackoff(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  const int64_t ceiling_us = int64_t{2000} << std::min(attempt, 5);
  std::uniform_int_distribution<int64_t> pick(ceiling_us / 2, ceiling_us);
  return std::chrono::microseconds(pick(rng));
}

}  // namespace

Status MysqlPool::RunBody(const MysqlSession& session, const char* op, const Body& body,
                          std::optional<int> lock_wait_s) {
  const std::string what = std::string("mysql ") + op;
  const auto start = std::chrono::steady_clock::now();
  const int budget_ms = options_.retry_budget_ms >= 0 ? options_.retry_budget_ms
                                                      : MysqlOptions::kDefaultRetryBudgetMs;
  const auto deadline = start + std::chrono::milliseconds(budget_ms);
  int lost_retries = 0;
  int conflict_retries = 0;
  bool fresh = false;
  for (;;) {
    auto acquired = Acquire(fresh);
    if (!acquired.ok()) return acquired.error();
    std::unique_ptr<MysqlConn> c = std::move(acquired).value();
    c->commit_failure.reset();
    c->session = &session;
    bool lost = false;
    bool conflict = false;
    bool retryable = true;
    Error err;
    try {
      c->UseLockWait(lock_wait_s);
      // A snapshot lasts until its transaction ends, which a call of plain
      // reads alone would not mark: its end is made certain.
      if (options_.snapshot_reads) c->in_txn = true;
      body(*c, retryable);
      c->RollbackQuietly();  // no-op unless fn returned early inside a transaction
      const bool broken = c->broken;
      Release(std::move(c), broken);
      return OkStatus();
    } catch (const sql::SQLException& e) {
      lost = c->LostAfter(e.getErrorCode());
      conflict = !lost && MysqlConflict(e.getErrorCode());
      if (conflict) ProcessStoreStats().conflicts.fetch_add(1, std::memory_order_relaxed);
      err = MysqlExceptionError(e, what, lost, session.duplicate_key);
    } catch (const std::exception& e) {
      lost = c->LostAfter(0);
      err = MakeError(lost ? ErrorCode::kStoreUnavailable : ErrorCode::kInternal,
                      what + ": " + e.what());
    }
    if (!lost) c->RollbackQuietly();
    const bool broken = lost || c->broken;
    const size_t host = c->host;
    Release(std::move(c), broken);
    if (lost) {
      MarkFailed(host);  // its replacement goes to the next healthy host
      DropIdle();
    }
    const auto now = std::chrono::steady_clock::now();
    if (lost && retryable && lost_retries < kMaxLostRetries && now < deadline) {
      ++lost_retries;
      fresh = true;
      continue;
    }
    if (conflict && conflict_retries < kMaxConflictRetries) {
      const auto pause = ConflictBackoff(conflict_retries);
      if (now + pause < deadline) {
        ++conflict_retries;
        ProcessStoreStats().conflict_retries.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(pause);
        fresh = false;
        continue;
      }
    }
    return err;
  }
}

Status MysqlPool::Prepare(const MysqlSession& session,
                          const std::function<void(MysqlConn&)>& prepare) {
  std::unique_ptr<MysqlConn> c;
  {
    MutexLock lock(mu_);
    const int cap = options_.pool_size > 0 ? options_.pool_size : 1;
    if (open_ < cap) {
      ++open_;  // ours to open
    } else if (!idle_.empty()) {
      c = std::move(idle_.front());  // the longest idle: perhaps never readied
      idle_.erase(idle_.begin());
    } else {
      return OkStatus();  // every connection is open and busy
    }
  }
  if (!c) {
    auto opened = ConnectCounted();
    if (!opened.ok()) return opened.error();
    c = std::move(opened).value();
  }
  c->session = &session;
  try {
    prepare(*c);
  } catch (const sql::SQLException& e) {
    const bool lost = c->LostAfter(e.getErrorCode());
    const size_t host = c->host;
    Release(std::move(c), lost);
    if (lost) MarkFailed(host);
    return MysqlExceptionError(e, "mysql prepare", lost, session.duplicate_key);
  }
  Release(std::move(c), false);
  return OkStatus();
}

Status MysqlPool::Ping(const MysqlSession& session, int stmt) {
  return Run<Ok>(session, "ping", [stmt](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::ResultSet> rs(c.Stmt(stmt).executeQuery());
    rs.reset();
    c.Commit();
    return Ok{};
  });
}

}  // namespace seqd
