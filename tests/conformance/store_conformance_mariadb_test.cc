// SegmentStore conformance, suite "mariadb": the checks every backend
// passes, and MariaDB's own cases. Needs SEQD_TEST_MYSQL_URL (see
// scripts/mariadb.sh); fails, not skips, without it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/mysql/mysql_store.h"
#include "storage/segment_store.h"
#include "storage/store_factory.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/fake_db_servers.h"
#include "tests/conformance/segment_checks.h"

namespace seqd {
namespace {

using namespace conformance;
using Clock = std::chrono::steady_clock;

}  // namespace

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: keys compare byte for byte: case and trailing spaces make other keys") {
    MysqlBackend b;
    SegmentStore& s = b.store();
    const std::string k = UniqueName("CaseKey");
    REQUIRE_OK(s.CreateKey(k, 10, ""));
    std::string lower = k, upper = k;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // One row, and three other spellings that are no row (the table seqd
    // creates keeps keys as VARBINARY: no case folding, no space padding).
    auto got = s.ReserveMany({{k, std::nullopt, {}},
                              {lower, std::nullopt, {}},
                              {upper, std::nullopt, {}},
                              {k + " ", std::nullopt, {}}});
    REQUIRE(got.size() == 4);
    CheckSegment(got[0], 1, 10, 10);
    CHECK_ERR(got[1], ErrorCode::kUnknownKey);
    CHECK_ERR(got[2], ErrorCode::kUnknownKey);
    CHECK_ERR(got[3], ErrorCode::kUnknownKey);
    CHECK_ERR(s.Reserve(lower, std::nullopt), ErrorCode::kUnknownKey);
    // Created, each is a row of its own, from 1.
    REQUIRE_OK(s.CreateKey(lower, 10, ""));
    REQUIRE_OK(s.CreateKey(k + " ", 5, ""));
    CheckSegment(s.Reserve(lower, std::nullopt), 1, 10, 10);
    CheckSegment(s.Reserve(k + " ", std::nullopt), 1, 5, 5);
    CheckSegment(s.Reserve(k, std::nullopt), 11, 20, 10);
    auto max = s.GetMaxIds({k, lower, upper, k + " "});
    REQUIRE_OK(max);
    CHECK(*max == std::vector<int64_t>{20, 10, 0, 5});
  }

  TEST_CASE("mariadb: SEQD_TEST_MYSQL_URL is set and the server answers") {
    MysqlStore store(TestMysqlOptions());
    REQUIRE_OK(store.Ping());
    REQUIRE_OK(store.EnsureSchema());
  }

  SEQD_CONFORMANCE_CASES(MysqlBackend, "mariadb")

  TEST_CASE("mariadb: several hosts: a silent one is passed over once, then the good one first") {
    // Host 1 accepts TCP connections and never answers (a hung server: the
    // connect timeout, 1 s, runs out); host 2 is the server under test.
    const SilentServer silent;
    MysqlOptions o = TestMysqlOptions();
    o.hosts.insert(o.hosts.begin(), MysqlHost{"127.0.0.1", silent.port()});
    o.connect_timeout_s = 1;
    o.retry_budget_ms = 5000;
    MysqlStore store(o);
    auto start = Clock::now();
    REQUIRE_OK(store.Ping());
    CHECK(Clock::now() - start >= std::chrono::milliseconds(900));  // host 1 tried once
    // Both connections of the pool at once: the second is opened on host 2
    // at once, host 1 is not tried again.
    start = Clock::now();
    std::thread other([&] { CHECK(store.Ping().ok()); });
    REQUIRE_OK(store.Ping());
    other.join();
    CHECK(Clock::now() - start < std::chrono::milliseconds(800));
    // Host 2's connections killed: the store serves again (host 2 is the
    // only one that answers, so it is back after host 1's timeout at most).
    auto raw = RawMysql(TestMysqlOptions());
    KillConnections(*raw, OtherConnectionIds(*raw, o.user));
    const std::string k = UniqueName("hosts");
    REQUIRE_OK(store.CreateKey(k, 10, ""));
    CheckSegment(store.Reserve(k, std::nullopt), 1, 10, 10);
  }

  TEST_CASE("mariadb: after KILL of the store's connections the next call reconnects") {
    MysqlBackend b;
    MysqlStore& s = b.mysql();
    const std::string k = UniqueName("kill");
    REQUIRE_OK(s.CreateKey(k, 10, ""));
    CheckSegment(s.Reserve(k, std::nullopt), 1, 10, 10);

    const RawHosts raw(b.options());
    auto other_ids = [&] { return raw.OtherIds(b.options().user); };
    int64_t last = 10;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      const std::vector<RawHosts::ConnId> ids =
          raw.KillHeld(b.options().user, [&] { (void)s.Ping(); });
      auto r = s.Reserve(k, std::nullopt);
      REQUIRE_MESSAGE(r.ok(), "Reserve after KILL: ", Describe(r));
      // A retried reservation may skip a segment but never repeat one.
      CHECK(r->first > last);
      CHECK(r->last - r->first + 1 == 10);
      last = r->last;
      REQUIRE_OK(s.Ping());
      REQUIRE_OK(s.GetKey(k));
      // The store now runs on new connections.
      // (Killed threads may linger in PROCESSLIST for a moment.)
      std::vector<RawHosts::ConnId> now;
      bool any_old = true;
      for (int i = 0; i < 50 && any_old; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        now = other_ids();
        any_old = std::any_of(now.begin(), now.end(), [&](const RawHosts::ConnId& id) {
          return std::find(ids.begin(), ids.end(), id) != ids.end();
        });
      }
      CHECK_FALSE(now.empty());
      CHECK_FALSE(any_old);
    }
  }

  TEST_CASE("mariadb: wrong password is kStoreUnavailable and not echoed") {
    MysqlOptions o = TestMysqlOptions();
    o.password = "definitely-wrong-pw";
    MysqlStore store(o);
    auto r = store.Ping();
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) {
      CHECK(r.error().message.find("1045") != std::string::npos);
      CHECK(r.error().message.find("definitely-wrong-pw") == std::string::npos);
    }
  }

  TEST_CASE("mariadb: the password from the config overrides the URL's") {
    const char* url = std::getenv("SEQD_TEST_MYSQL_URL");
    REQUIRE(url != nullptr);
    const MysqlOptions good = TestMysqlOptions();
    // The URL without its password (or with a wrong one): the store
    // connects with the password given apart (file or environment).
    const std::string wrong = "mysql://" + good.user + ":not-it@" + good.hosts[0].host + ":" +
                              std::to_string(good.hosts[0].port) + "/" + good.database;
    StoreNeeds needs;
    needs.password = good.password;
    auto stores = OpenStores(wrong, needs);
    REQUIRE(stores.ok());
    REQUIRE_OK(stores->segments->Ping());
    REQUIRE_OK(stores->messages->Ping());
    // Without it, the URL's wrong password is used, and never echoed.
    auto plain = OpenStores(wrong, StoreNeeds{});
    REQUIRE(plain.ok());
    Status ping = plain->segments->Ping();
    CHECK_ERR(ping, ErrorCode::kStoreUnavailable);
    if (!ping.ok()) CHECK(ping.error().message.find("not-it") == std::string::npos);
  }

  TEST_CASE("mariadb: a key the column cannot hold is refused, keys stay usable") {
    MysqlBackend b;
    // Over-long key (varbinary(255)) in strict mode: refused with a message
    // that names no table, not a crash and not a truncated row.
    const std::string huge(300, 'x');
    auto r = b.store().CreateKey(huge, 10, "");
    if (!r.ok()) {
      CHECK(r.error().code == ErrorCode::kInvalidArgument);
      CHECK(r.error().message.find("cannot store this id") != std::string::npos);
      CHECK(r.error().message.find("leaf_alloc") == std::string::npos);
      CHECK(r.error().message.find("MySQL error") == std::string::npos);
    } else {
      MESSAGE("server truncated the key silently (non-strict sql_mode)");
    }
    const std::string k = UniqueName("after-error");
    REQUIRE_OK(b.store().CreateKey(k, 10, ""));
    CheckSegment(b.store().Reserve(k, std::nullopt), 1, 10, 10);
  }
}

}  // namespace seqd
