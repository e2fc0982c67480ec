// MysqlStore against a row another transaction holds: a
// reservation batch waits MysqlStore::kBatchLockWaitS at most, is rolled
// back, and runs one key per transaction, landing the free keys first and
// the locked one once its row is free; nothing of the rolled-back batch is
// ever served. The batch's shorter lock wait ends with it.
#include <cppconn/connection.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conformance_support.h"
#include "storage/mysql/mysql_store.h"
#include "storage/store_stats.h"

namespace seqd {
namespace {

using conformance::RawExec;
using conformance::RawMysql;
using conformance::TestMysqlOptions;
using conformance::UniqueName;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

const char* const kNoStatements[] = {"SELECT 1"};
const MysqlSession kSession{kNoStatements, nullptr, std::nullopt};

int64_t LockWait(MysqlConn& c) {
  std::unique_ptr<sql::ResultSet> rs(
      c.Plain().executeQuery("SELECT @@SESSION.innodb_lock_wait_timeout"));
  rs->next();
  return rs->getInt64(1);
}

}  // namespace

TEST_SUITE("mariadb_pool") {
  TEST_CASE("mariadb: MysqlStore: a batch behind a locked row lands the other keys first") {
    MysqlOptions options = TestMysqlOptions();
    options.pool_size = 2;
    MysqlStore store(options);
    REQUIRE_OK(store.EnsureSchema());
    const std::string locked = UniqueName("rowlock-locked");
    std::vector<ReserveRequest> requests;
    for (int i = 0; i < 6; ++i) {
      ReserveRequest r;
      r.key = i == 3 ? locked : UniqueName("rowlock-free");
      REQUIRE_OK(store.CreateKey(r.key, 10, "rowlock"));
      requests.push_back(std::move(r));
    }
    ReserveRequest created;  // created and reserved in the batch's one statement
    created.key = UniqueName("rowlock-new");
    created.create_step = 10;
    created.create_description = "rowlock";
    requests.push_back(created);

    // Another transaction holds `locked`'s row for 3 s.
    std::unique_ptr<sql::Connection> raw = RawMysql(options);
    RawExec(*raw, "BEGIN");
    {
      std::unique_ptr<sql::Statement> st(raw->createStatement());
      std::unique_ptr<sql::ResultSet> rs(st->executeQuery(
          "SELECT max_id FROM leaf_alloc WHERE biz_tag = '" + locked + "' FOR UPDATE"));
      REQUIRE(rs->next());  // read to the end: the connection is free again
      CHECK_FALSE(rs->next());
    }
    const int64_t timeouts_before = ProcessStoreStats().batch_lock_timeouts.load();
    const Clock::time_point start = Clock::now();
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      RawExec(*raw, "ROLLBACK");
    });
    std::vector<double> landed_at(requests.size(), -1);
    std::vector<std::optional<Result<ReservedSegment>>> got(requests.size());
    store.ReserveEach(requests, [&](size_t i, Result<ReservedSegment> r) {
      CHECK(landed_at[i] < 0);  // once each
      landed_at[i] = Since(start);
      got[i] = std::move(r);
    });
    release.join();

    CHECK(ProcessStoreStats().batch_lock_timeouts.load() == timeouts_before + 1);
    for (size_t i = 0; i < requests.size(); ++i) {
      CAPTURE(requests[i].key);
      CAPTURE(landed_at[i]);
      REQUIRE(got[i]);
      REQUIRE_OK(*got[i]);
      // The first segment: the rolled-back batch reserved nothing.
      CHECK((*got[i])->first == 1);
      CHECK((*got[i])->last == 10);
      if (requests[i].key == locked) {
        CHECK(landed_at[i] >= 2.9);  // once its row was free
      } else {
        CHECK(landed_at[i] >= 0.9);  // the batch's own wait
        CHECK(landed_at[i] < 2.5);   // not the locked row's
      }
    }
    for (const ReserveRequest& r : requests) {
      auto next = store.Reserve(r.key, std::nullopt);
      REQUIRE_OK(next);
      CHECK(next->first == 11);
    }
  }

  TEST_CASE("mariadb: MysqlPool: a body's lock wait is its own") {
    MysqlOptions options = TestMysqlOptions();
    options.pool_size = 1;
    options.lock_wait_timeout_s = 7;
    MysqlPool pool(options);
    auto set = pool.Run<int64_t>(
        kSession, "test", [](MysqlConn& c) -> Result<int64_t> { return LockWait(c); }, 1);
    REQUIRE_OK(set);
    CHECK(*set == 1);
    // The same (only) connection, its own wait again.
    auto after = pool.Run<int64_t>(kSession, "test",
                                   [](MysqlConn& c) -> Result<int64_t> { return LockWait(c); });
    REQUIRE_OK(after);
    CHECK(*after == 7);
    auto none = pool.Run<int64_t>(
        kSession, "test", [](MysqlConn& c) -> Result<int64_t> { return LockWait(c); }, 0);
    REQUIRE_OK(none);
    CHECK(*none == 0);
  }
}

}  // namespace seqd
