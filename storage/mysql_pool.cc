#include "storage/mysql_pool.h"

#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

namespace seqd {
namespace {

constexpr int kErrDupKey = 1062;

// Error codes meaning the connection itself is unusable.
bool IsConnectionLost(int code) {
  switch (code) {
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2011:  // CR_TCP_CONNECTION
    case 2013:  // CR_SERVER_LOST
    case 2026:  // CR_SSL_CONNECTION_ERROR
    case 2027:  // CR_MALFORMED_PACKET
    case 2048:  // CR_INVALID_CONN_HANDLE
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
      return true;
    default:
      return false;
  }
}

// Server answered, but the store cannot serve right now.
bool IsTransient(int code) {
  switch (code) {
    case 1040:  // ER_CON_COUNT_ERROR
    case 1203:  // ER_TOO_MANY_USER_CONNECTIONS
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
    case 1213:  // ER_LOCK_DEADLOCK
    case 1290:  // ER_OPTION_PREVENTS_STATEMENT (read-only replica)
    case 1792:  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    case 1836:  // ER_READ_ONLY_MODE
      return true;
    default:
      return false;
  }
}

// " (MySQL error N, SQLSTATE S)"
std::string CodeSuffix(const sql::SQLException& e) {
  const std::string& state = e.getSQLState();
  return " (MySQL error " + std::to_string(e.getErrorCode()) +
         (state.empty() ? std::string() : ", SQLSTATE " + state) + ")";
}

Error ExceptionError(const sql::SQLException& e, const std::string& op, bool lost,
                     const std::optional<ErrorCode>& duplicate_key) {
  const int code = e.getErrorCode();
  ErrorCode ec = ErrorCode::kInternal;
  if (code == kErrDupKey && duplicate_key) {
    ec = *duplicate_key;
  } else if (lost || IsConnectionLost(code) || IsTransient(code)) {
    ec = ErrorCode::kStoreUnavailable;
  }
  return MakeError(ec, op + ": " + e.what() + CodeSuffix(e));
}

}  // namespace

std::string DescribeMysql(const MysqlOptions& o) {
  std::string host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  return o.user + "@" + host + ":" + std::to_string(o.port) + "/" + o.database;
}

sql::Driver* MysqlDriver() {
  // get_driver_instance() is not thread-safe on first use; a function-local
  // static is initialized once, whichever store (or test) asks first.
  static sql::Driver* const driver = get_driver_instance();
  return driver;
}

// ---------------------------------------------------------------- MysqlConn

MysqlConn::MysqlConn(const MysqlSession& s) : session(s), stmts(s.statements.size()) {}

MysqlConn::~MysqlConn() {
  // Statements before their connection.
  lists.clear();
  stmts.clear();
}

sql::PreparedStatement& MysqlConn::Stmt(int id) {
  auto& s = stmts[static_cast<size_t>(id)];
  if (!s) s.reset(conn->prepareStatement(session.statements[static_cast<size_t>(id)]));
  s->clearParameters();
  in_txn = true;
  return *s;
}

sql::PreparedStatement& MysqlConn::List(int kind, size_t n) {
  auto& s = lists[{kind, n}];
  if (!s) s.reset(conn->prepareStatement(session.list_sql(kind, n)));
  s->clearParameters();
  in_txn = true;
  return *s;
}

void MysqlConn::Commit() {
  conn->commit();
  in_txn = false;
}

void MysqlConn::Rollback() {
  conn->rollback();
  in_txn = false;
}

void MysqlConn::RollbackQuietly() noexcept {
  if (!in_txn) return;
  in_txn = false;
  try {
    conn->rollback();
  } catch (...) {
  }
}

bool MysqlConn::LostAfter(int code) noexcept {
  if (IsConnectionLost(code)) return true;
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

// ---------------------------------------------------------------- MysqlPool

MysqlPool::MysqlPool(MysqlOptions options, const MysqlSession& session)
    : options_(std::move(options)), session_(session) {}

MysqlPool::~MysqlPool() = default;

Result<std::unique_ptr<MysqlConn>> MysqlPool::Connect() {
  const std::string where = "mysql connect to " + DescribeMysql(options_);
  try {
    sql::ConnectOptionsMap props;
    const bool v6 = options_.host.find(':') != std::string::npos;
    props["hostName"] = "tcp://" + (v6 ? "[" + options_.host + "]" : options_.host) + ":" +
                        std::to_string(options_.port);
    props["userName"] = options_.user;
    props["password"] = options_.password;
    props["schema"] = options_.database;
    props["OPT_CONNECT_TIMEOUT"] = options_.connect_timeout_s;
    props["OPT_READ_TIMEOUT"] = options_.rw_timeout_s;
    props["OPT_WRITE_TIMEOUT"] = options_.rw_timeout_s;
    props["OPT_RECONNECT"] = false;
    props["OPT_CHARSET_NAME"] = "utf8mb4";
    // Affected rows = matched rows, so an UPDATE that changes nothing
    // (SetStep to the current step) still proves the row exists.
    props["CLIENT_FOUND_ROWS"] = true;
    auto c = std::make_unique<MysqlConn>(session_);
    c->conn.reset(MysqlDriver()->connect(props));
    if (!c->conn) return MakeError(ErrorCode::kStoreUnavailable, where + ": no connection");
    if (!session_.setup.empty()) {
      std::unique_ptr<sql::Statement> s(c->conn->createStatement());
      for (const char* stmt : session_.setup) s->execute(stmt);
    }
    c->conn->setAutoCommit(false);
    return c;
  } catch (const sql::SQLException& e) {
    // Any failure to connect (refused, timeout, access denied, unknown
    // database, too many connections) means the store is unavailable.
    return MakeError(ErrorCode::kStoreUnavailable, where + ": " + e.what() + CodeSuffix(e));
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kStoreUnavailable, where + ": " + e.what());
  }
}

Result<std::unique_ptr<MysqlConn>> MysqlPool::Acquire(bool fresh) {
  std::unique_ptr<MysqlConn> stale;  // closed outside the lock
  {
    std::unique_lock lock(mu_);
    const int cap = options_.pool_size > 0 ? options_.pool_size : 1;
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < cap; });
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
  auto c = Connect();
  if (!c.ok()) {
    {
      std::lock_guard lock(mu_);
      --open_;
    }
    cv_.notify_one();
  }
  return c;
}

void MysqlPool::Release(std::unique_ptr<MysqlConn> conn, bool broken) {
  {
    std::lock_guard lock(mu_);
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
    std::lock_guard lock(mu_);
    dropped.swap(idle_);
    open_ -= static_cast<int>(dropped.size());
  }
  cv_.notify_all();
}

Status MysqlPool::RunBody(const char* op, const Body& body) {
  const std::string what = std::string("mysql ") + op;
  for (int attempt = 0;; ++attempt) {
    auto acquired = Acquire(/*fresh=*/attempt > 0);
    if (!acquired.ok()) return acquired.error();
    std::unique_ptr<MysqlConn> c = std::move(acquired).value();
    bool lost = false;
    bool retryable = true;
    Error err;
    try {
      body(*c, retryable);
      c->RollbackQuietly();  // no-op unless fn returned early inside a transaction
      Release(std::move(c), /*broken=*/false);
      return OkStatus();
    } catch (const sql::SQLException& e) {
      lost = c->LostAfter(e.getErrorCode());
      err = ExceptionError(e, what, lost, session_.duplicate_key);
    } catch (const std::exception& e) {
      lost = c->LostAfter(0);
      err = MakeError(lost ? ErrorCode::kStoreUnavailable : ErrorCode::kInternal,
                      what + ": " + e.what());
    }
    if (!lost) c->RollbackQuietly();
    Release(std::move(c), /*broken=*/lost);
    if (!lost) return err;
    DropIdle();
    if (attempt >= 1 || !retryable) return err;
  }
}

Status MysqlPool::Ping(int stmt) {
  return Run<Ok>("ping", [stmt](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::ResultSet> rs(c.Stmt(stmt).executeQuery());
    rs.reset();
    c.Commit();
    return Ok{};
  });
}

}  // namespace seqd
