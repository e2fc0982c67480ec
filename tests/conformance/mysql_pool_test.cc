// The MySQL pool's commit path against the real MariaDB (SEQD_TEST_MYSQL_URL):
// a COMMIT on a connection that died must fail and count as an unknown
// outcome (Connector/C++ 1.1.12's commit() would report success), a failed
// rollback must not return a dead connection to the pool, and a lost
// connection is retried on a new one.
#include "storage/mysql/mysql_pool.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>

#include "conformance_support.h"
#include "storage/mysql/mysql_errors.h"
#include "storage/store_stats.h"

namespace seqd {
namespace {

using conformance::RawExec;
using conformance::RawMysql;
using conformance::TestMysqlOptions;

const char* const kNoStatements[] = {"SELECT 1"};
const MysqlSession kSession{kNoStatements, nullptr, std::nullopt};

constexpr const char* kTable = "seqd_pool_test";

int64_t ConnectionId(MysqlConn& c) {
  std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery("SELECT CONNECTION_ID()"));
  rs->next();
  return rs->getInt64(1);
}

// The row as committed, wherever: on a Galera node the read first waits
// until the node has applied what the cluster committed (the pool's retry
// may have committed through another node, the killed one's host being
// tried last).
int64_t ReadValue(sql::Connection& raw) {
  std::unique_ptr<sql::Statement> s(raw.createStatement());
  try {
    s->execute("SET SESSION wsrep_sync_wait = 1");
  } catch (const sql::SQLException& e) {
    REQUIRE(e.getErrorCode() == kMysqlErrUnknownSystemVariable);  // MySQL: no Galera
  }
  std::unique_ptr<sql::ResultSet> rs(
      s->executeQuery(std::string("SELECT v FROM ") + kTable + " WHERE id = 1"));
  REQUIRE(rs->next());
  return rs->getInt64(1);
}

struct PoolFixture {
  PoolFixture() : options(TestMysqlOptions()), raw(RawMysql(options)) {
    options.pool_size = 1;
    RawExec(*raw, std::string("CREATE TABLE IF NOT EXISTS ") + kTable +
                      " (id INT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB");
    RawExec(*raw, std::string("REPLACE INTO ") + kTable + " VALUES (1, 0)");
  }
  // Runs an UPDATE v = v + 1, then KILLs the connection from outside.
  void UpdateThenKill(MysqlConn& c) {
    const int64_t id = ConnectionId(c);
    c.in_txn = true;
    c.Plain().executeUpdate(std::string("UPDATE ") + kTable + " SET v = v + 1 WHERE id = 1");
    RawExec(*raw, "KILL " + std::to_string(id));
  }
  MysqlOptions options;
  std::unique_ptr<sql::Connection> raw;
};

}  // namespace

TEST_SUITE("mariadb_pool") {
  TEST_CASE("mariadb: MysqlPool: a COMMIT on a dead connection fails as an unknown outcome") {
    PoolFixture f;
    MysqlPool pool(f.options);
    StoreStats& stats = ProcessStoreStats();
    const int64_t unknown_before = stats.commits_unknown.load();
    const int64_t lost_before =
        stats.commit_failures[static_cast<size_t>(CommitFailure::kLost)].load();
    int runs = 0;
    bool threw = false;
    bool unknown = false;
    auto r =
        pool.Run<Ok>(kSession, "test commit", [&](MysqlConn& c, bool& retryable) -> Result<Ok> {
          ++runs;
          retryable = false;  // see the failure itself, not a retry
          f.UpdateThenKill(c);
          try {
            c.Commit();
          } catch (const sql::SQLException&) {
            threw = true;
            unknown = c.CommitOutcomeUnknown();
            throw;
          }
          return Ok{};
        });
    CHECK(threw);
    CHECK(unknown);
    CHECK(runs == 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kStoreUnavailable);
    CHECK(stats.commits_unknown.load() == unknown_before + 1);
    CHECK(stats.commit_failures[static_cast<size_t>(CommitFailure::kLost)].load() ==
          lost_before + 1);
    // The server rolled the killed transaction back.
    CHECK(ReadValue(*f.raw) == 0);
  }

  TEST_CASE("mariadb: MysqlPool: a lost COMMIT is retried on a new connection") {
    PoolFixture f;
    MysqlPool pool(f.options);
    int runs = 0;
    std::vector<int64_t> connections;
    auto r = pool.Run<Ok>(kSession, "test retry", [&](MysqlConn& c) -> Result<Ok> {
      ++runs;
      connections.push_back(ConnectionId(c));
      if (runs == 1) {
        f.UpdateThenKill(c);
      } else {
        c.in_txn = true;
        c.Plain().executeUpdate(std::string("UPDATE ") + kTable + " SET v = v + 1 WHERE id = 1");
      }
      c.Commit();
      return Ok{};
    });
    REQUIRE(r.ok());
    CHECK(runs == 2);
    REQUIRE(connections.size() == 2);
    CHECK(connections[0] != connections[1]);
    CHECK(ReadValue(*f.raw) == 1);  // exactly once
  }

  TEST_CASE("mariadb: MysqlPool: a failed rollback closes the connection instead of pooling it") {
    PoolFixture f;
    MysqlPool pool(f.options);
    int64_t killed = -1;
    auto r = pool.Run<Ok>(kSession, "test rollback", [&](MysqlConn& c) -> Result<Ok> {
      killed = ConnectionId(c);
      f.UpdateThenKill(c);
      return MakeError(ErrorCode::kInvalidArgument, "give up inside the transaction");
    });
    CHECK_FALSE(r.ok());
    // The next call runs once, on a new connection: the dead one was not
    // handed out again.
    int runs = 0;
    int64_t next = -1;
    auto again = pool.Run<Ok>(kSession, "test after", [&](MysqlConn& c) -> Result<Ok> {
      ++runs;
      next = ConnectionId(c);
      c.Commit();
      return Ok{};
    });
    REQUIRE(again.ok());
    CHECK(runs == 1);
    CHECK(next != killed);
    CHECK(ReadValue(*f.raw) == 0);
  }

  TEST_CASE("mariadb: MysqlPool: a new connection has autocommit off") {
    PoolFixture f;
    MysqlPool pool(f.options);
    auto r = pool.Run<int64_t>(kSession, "test autocommit", [&](MysqlConn& c) -> Result<int64_t> {
      std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery("SELECT @@autocommit"));
      rs->next();
      return rs->getInt64(1);
    });
    REQUIRE(r.ok());
    CHECK(*r == 0);
  }

  TEST_CASE("mariadb: MysqlPool: a Galera node's sessions wait for causality, others are left") {
    // With the URL's default, wsrep_sync_wait is 1 on a Galera node
    // (@@wsrep_on) and untouched elsewhere; the URL's value replaces the 1.
    for (const int from_url : {-1, 3}) {
      CAPTURE(from_url);
      MysqlOptions o = TestMysqlOptions();
      o.wsrep_sync_wait = from_url;
      MysqlPool pool(o);
      auto r = pool.Run<std::pair<bool, int>>(
          kSession, "read wsrep", [](MysqlConn& c) -> Result<std::pair<bool, int>> {
            std::unique_ptr<sql::ResultSet> rs(
                c.Plain().executeQuery("SELECT @@wsrep_on, @@wsrep_sync_wait"));
            REQUIRE(rs->next());
            return std::pair<bool, int>{rs->getInt(1) != 0, rs->getInt(2)};
          });
      REQUIRE(r.ok());
      const auto [galera, sync_wait] = *r;
      MESSAGE("wsrep_on ", galera, ", wsrep_sync_wait ", sync_wait);
      if (galera) {
        CHECK(sync_wait == (from_url < 0 ? 1 : from_url));
      } else {
        CHECK(sync_wait == 0);  // the server's default: not set
      }
    }
  }
}

}  // namespace seqd
