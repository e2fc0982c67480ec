// Conformance suite for WorkerLeaseStore implementations.
//
// The same checks (lease_checks.h) run against every backend
// (lease_backends.h), each in its own doctest suite:
//   memory, sqlite  -> ctest worker_lease_conformance
//   mariadb         -> ctest worker_lease_conformance_mariadb; needs
//                      SEQD_TEST_MYSQL_URL (see scripts/mariadb.sh) and fails,
//                      not skips, without it. Each case starts from an empty
//                      seqd_worker_lease table (it DELETEs every row).
//   misc            -> factory spec parsing (no database needed)
//
// Time: the memory store runs on a manual clock that the checks advance; the
// SQL stores run on their real clock, so expiry there means sleeping past a
// short ttl.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/memory/memory_worker_lease_store.h"
#include "storage/mysql/mysql_worker_lease_store.h"
#include "storage/sqlite/sqlite_worker_lease_store.h"
#include "storage/worker_lease_store.h"
#include "storage/worker_lease_store_factory.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/lease_checks.h"

namespace seqd {
namespace {

using namespace lease_conformance;

}  // namespace

// ================================================================ suites

TEST_SUITE("memory") {
  SEQD_LEASE_CONFORMANCE_CASES(MemoryBackend, "memory")

  TEST_CASE("memory: the store clock is the given function, exactly") {
    MemoryBackend b;
    WorkerLeaseStore& s = b.store();
    const int64_t t0 = b.ExpectedNow();
    const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a", 4, 1000));
    CHECK(a.store_now_ms == t0);
    CHECK(a.expires_ms == t0 + 1000);
    b.Elapse(998);  // now t0 + 999: one ms left
    CheckError(s.Claim(Req("host-b:1", "inst-b", 1)), ErrorCode::kNotServing,
               "all 1 worker ids are leased");
    b.Elapse(0);  // now t0 + 1000 == expires_ms: expired
    const WorkerLease nb = MustClaim(s, Req("host-b:1", "inst-b", 1));
    CHECK(nb.worker_id == 0);
    CHECK(nb.store_now_ms == t0 + 1000);
    const std::vector<WorkerLease> rows = MustList(s);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].store_now_ms == t0 + 1000);
  }

  TEST_CASE("memory: the default clock is the system clock") {
    MemoryWorkerLeaseStore s;
    const int64_t before = SystemNowMs();
    const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a"));
    CHECK(a.store_now_ms >= before);
    CHECK(a.store_now_ms <= SystemNowMs());
  }
}

TEST_SUITE("sqlite") {
  SEQD_LEASE_CONFORMANCE_CASES(SqliteBackend, "sqlite")

  TEST_CASE("sqlite: the store clock is unix millis") {
    SqliteBackend b;
    CheckRealClock(b);
  }

  TEST_CASE("sqlite: leases persist across reopening; schema is idempotent") {
    SqliteBackend b;
    {
      auto s = b.NewInstance();
      CHECK(MustClaim(*s, Req("host-a:1", "inst-a")).worker_id == 0);
      REQUIRE_OK(s->Renew(0, "inst-a", kLongTtlMs, 4242));
    }
    auto s = b.NewInstance();
    REQUIRE_OK(s->EnsureSchema());
    const std::vector<WorkerLease> rows = MustList(*s);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].instance == "inst-a");
    CHECK(rows[0].time_bound_ms == 4242);
    const WorkerLease again = MustClaim(*s, Req("host-a:1", "inst-a"));
    CHECK(again.worker_id == 0);
    CHECK(again.time_bound_ms == 4242);
  }

  TEST_CASE("sqlite: a held write lock fails Claim with kStoreUnavailable") {
    SqliteBackend b;
    WorkerLeaseStore& s = b.store();
    CHECK(MustClaim(s, Req("host-a:1", "inst-a")).worker_id == 0);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(b.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto start = std::chrono::steady_clock::now();
    CHECK_ERR(s.Claim(Req("host-b:1", "inst-b")), ErrorCode::kStoreUnavailable);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    CHECK(MustClaim(s, Req("host-b:1", "inst-b")).worker_id == 1);
    REQUIRE_OK(s.Renew(0, "inst-a", kLongTtlMs, 1));
  }

  TEST_CASE("sqlite: unopenable path gives kStoreUnavailable, not a crash") {
    SqliteWorkerLeaseStore s("/proc/definitely/not/here/seqd.db");
    CHECK_ERR(s.EnsureSchema(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.Claim(Req("host-a:1", "inst-a")), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.Renew(0, "inst-a", kLongTtlMs, 1), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.Release(0, "inst-a", 1), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.List(), ErrorCode::kStoreUnavailable);
  }
}

TEST_SUITE("misc") {
  TEST_CASE("OpenWorkerLeaseStore: specs") {
    auto mem = OpenWorkerLeaseStore("memory:");
    REQUIRE_OK(mem);
    CHECK(MustClaim(**mem, Req("host-a:1", "inst-a")).worker_id == 0);

    // mysql: parses only; an unreachable server is reported by the calls.
    auto my = CheckSpecsAndOpenUnreachableMysql(
        [](const std::string& spec) { return OpenWorkerLeaseStore(spec); });
    CHECK_ERR(my->EnsureSchema(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(my->Claim(Req("host-a:1", "inst-a")), ErrorCode::kStoreUnavailable);
    CHECK_ERR(my->Renew(0, "inst-a", kLongTtlMs, 1), ErrorCode::kStoreUnavailable);
    CHECK_ERR(my->Release(0, "inst-a", 1), ErrorCode::kStoreUnavailable);
    CHECK_ERR(my->List(), ErrorCode::kStoreUnavailable);
    // Arguments are checked before any I/O.
    CHECK_ERR(my->Claim(Req("host-a:1", "")), ErrorCode::kInvalidArgument);

    TempDir dir("seqd-leaseconf-");
    {
      auto lite = OpenWorkerLeaseStore("sqlite:" + (dir.path() / "a" / "seqd.db").string());
      REQUIRE_OK(lite);
      CHECK(MustClaim(**lite, Req("host-a:1", "inst-a")).worker_id == 0);  // schema is there
    }
    CHECK_ERR(OpenWorkerLeaseStore("sqlite:/proc/nope/seqd.db"), ErrorCode::kStoreUnavailable);
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: SEQD_TEST_MYSQL_URL is set and the server answers") {
    MysqlWorkerLeaseStore store(TestMysqlOptions());
    REQUIRE_OK(store.EnsureSchema());
    REQUIRE_OK(store.EnsureSchema());  // idempotent
    REQUIRE_OK(store.List());
  }

  SEQD_LEASE_CONFORMANCE_CASES(MysqlBackend, "mariadb")

  TEST_CASE("mariadb: the store clock is unix millis") {
    MysqlBackend b;
    CheckRealClock(b);
  }

  TEST_CASE("mariadb: after KILL of the store's connections the next calls reconnect") {
    MysqlBackend b;
    WorkerLeaseStore& s = b.store();
    CHECK(MustClaim(s, Req("host-a:1", "inst-a")).worker_id == 0);
    const RawHosts raw(b.options());
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      raw.KillHeld(b.options().user, [&] { (void)s.List(); });
      const WorkerLease again = MustClaim(s, Req("host-a:1", "inst-a"));
      CHECK(again.worker_id == 0);
      auto r = s.Renew(0, "inst-a", kLongTtlMs, round);
      REQUIRE_OK(r);
      CHECK(r->time_bound_ms == round);
    }
    CHECK(MustClaim(s, Req("host-b:1", "inst-b")).worker_id == 1);
  }

  TEST_CASE("mariadb: schema is InnoDB, utf8mb4_bin, keyed by worker_id") {
    MysqlBackend b;
    auto raw = RawMysql(b.options());
    std::unique_ptr<sql::Statement> st(raw->createStatement());
    std::unique_ptr<sql::ResultSet> rs(
        st->executeQuery("SELECT ENGINE, TABLE_COLLATION FROM information_schema.TABLES "
                         "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'seqd_worker_lease'"));
    REQUIRE(rs->next());
    CHECK(rs->getString(1).asStdString() == "InnoDB");
    CHECK(rs->getString(2).asStdString() == "utf8mb4_bin");
    rs.reset(
        st->executeQuery("SELECT COLUMN_NAME, COALESCE(COLLATION_NAME, ''), COLUMN_KEY FROM "
                         "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
                         "TABLE_NAME = 'seqd_worker_lease' ORDER BY ORDINAL_POSITION"));
    std::vector<std::string> cols;
    while (rs->next()) {
      const std::string name = rs->getString(1).asStdString();
      cols.push_back(name);
      if (name == "owner" || name == "instance") {
        CHECK(rs->getString(2).asStdString() == "utf8mb4_bin");
      }
      CHECK((rs->getString(3).asStdString() == "PRI") == (name == "worker_id"));
    }
    CHECK(cols == std::vector<std::string>{"worker_id", "owner", "instance", "expires_ms",
                                           "time_bound_ms", "update_time"});
  }
}

}  // namespace seqd
