// Conformance suite for MessageStore implementations.
//
// The same checks (message_checks.h) run against every backend
// (message_backends.h), each in its own doctest suite:
//   memory, sqlite  -> ctest message_store_conformance
//   mariadb         -> ctest message_store_conformance_mariadb; needs
//                      SEQD_TEST_MYSQL_URL (see scripts/mariadb.sh) and fails,
//                      not skips, without it
//   misc            -> factory spec parsing (no database needed)
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
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/memory/memory_message_store.h"
#include "storage/message_store.h"
#include "storage/message_store_factory.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_store.h"
#include "storage/sqlite/sqlite_message_store.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/message_checks.h"

namespace seqd {
namespace {

using namespace message_conformance;

}  // namespace

// ================================================================ suites

TEST_SUITE("memory") {
  SEQD_MESSAGE_CONFORMANCE_CASES(MemoryBackend, "memory")

  TEST_CASE("memory: SetAvailable(false) fails every call and erases cache entries") {
    MemoryBackend b;
    MemoryMessageStore& s = b.memory();
    const std::string c = UniqueName("down");
    const std::string other = UniqueName("down-other");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "1")}, cache);
    cache[other] = 5;
    REQUIRE(cache[c] == 1);
    s.SetAvailable(false);
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req(c, "u", "2")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.count(c) == 0);
    CHECK(cache.count(other) == 1);  // not in the batch: kept
    CHECK_ERR(s.Ping(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.MaxSeq(c), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.GetBySeqs(c, std::vector<int64_t>{1}), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.GetMember(c, "u"), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.SetConvMinSeq(c, 2), ErrorCode::kStoreUnavailable);
    s.SetAvailable(true);
    auto out = MustAppend(s, {Req(c, "u", "2")}, cache);
    CHECK(out[0].seq == 2);
  }
}

TEST_SUITE("groups"){SEQD_MESSAGE_CONFORMANCE_CASES(GroupedBackend, "two groups")}

TEST_SUITE("sqlite") {
  SEQD_MESSAGE_CONFORMANCE_CASES(SqliteBackend, "sqlite")

  TEST_CASE("sqlite: a held write lock fails Append with kStoreUnavailable, cache erased") {
    SqliteBackend b;
    MessageStore& s = b.store();
    const std::string c = UniqueName("locked");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "1")}, cache);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(b.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto start = std::chrono::steady_clock::now();
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req(c, "u", "2")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(cache.count(c) == 0);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    auto out = MustAppend(s, {Req(c, "u", "2"), Req(c, "u", "1")}, cache);
    CHECK(out[0].seq == 2);
    CHECK(out[1].duplicate);
  }

  TEST_CASE("sqlite: data persists across reopening; schema is idempotent") {
    SqliteBackend b;
    const std::string c = UniqueName("persist");
    MaxSeqCache cache;
    {
      auto s = b.NewInstance();
      MustAppend(*s, {Req(c, "u", "1", std::string("x\0y", 3)), Req(c, "u", "2")}, cache);
    }
    auto s = b.NewInstance();
    auto all = ReadAll(*s, c);
    REQUIRE(all.size() == 2);
    CHECK(all[0].payload == std::string("x\0y", 3));
  }

  TEST_CASE("sqlite: unopenable path gives kStoreUnavailable, not a crash") {
    SqliteMessageStore s("/proc/definitely/not/here/seqd.db");
    CHECK_ERR(s.Ping(), ErrorCode::kStoreUnavailable);
    MaxSeqCache cache{{"c", 3}};
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.empty());
  }
}

TEST_SUITE("misc") {
  TEST_CASE("OpenMessageStore: specs") {
    auto mem = OpenMessageStore("memory:");
    REQUIRE_OK(mem);
    MaxSeqCache cache;
    auto out = (*mem)->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache);
    REQUIRE_OK(out);
    CHECK((*out)[0].seq == 1);

    // mysql: parses only; an unreachable server is reported by the calls.
    auto my = CheckSpecsAndOpenUnreachableMysql(
        [](const std::string& spec) { return OpenMessageStore(spec); });
    CHECK_ERR(my->Ping(), ErrorCode::kStoreUnavailable);
    cache = {{"c", 4}};
    CHECK_ERR(my->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.empty());

    const fs::path dir = MakeTempDir("seqd-msgconf-");
    auto lite = OpenMessageStore("sqlite:" + (dir / "a" / "seqd.db").string());
    REQUIRE_OK(lite);
    out = (*lite)->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache);
    REQUIRE_OK(out);
    CHECK((*out)[0].seq == 1);
    lite = MakeError(ErrorCode::kInternal, "closed");
    CHECK_ERR(OpenMessageStore("sqlite:/proc/nope/seqd.db"), ErrorCode::kStoreUnavailable);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: SEQD_TEST_MYSQL_URL is set and the server answers") {
    MysqlMessageStore store(TestMysqlOptions());
    REQUIRE_OK(store.Ping());
    REQUIRE_OK(store.EnsureSchema());
    REQUIRE_OK(store.EnsureSchema());  // idempotent
  }

  SEQD_MESSAGE_CONFORMANCE_CASES(MysqlBackend, "mariadb")

  TEST_CASE("mariadb: after KILL of the store's connections the next calls reconnect") {
    MysqlBackend b;
    MessageStore& s = b.store();
    const std::string c = UniqueName("kill");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "0")}, cache);
    const RawHosts raw(b.options());
    int64_t expect = 1;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      raw.KillHeld(b.options().user, [&] { (void)s.Ping(); });
      auto r = s.Append(std::vector<AppendRequest>{Req(c, "u", Num("r", round))}, cache);
      REQUIRE_MESSAGE(r.ok(), "Append after KILL: ", Describe(r));
      CHECK((*r)[0].seq == ++expect);
      CHECK_FALSE((*r)[0].duplicate);
      REQUIRE_OK(s.Ping());
      auto max = s.MaxSeq(c);
      REQUIRE_OK(max);
      CHECK(*max == expect);
    }
  }

  TEST_CASE("mariadb: schema is InnoDB, utf8mb4_bin, with the documented keys") {
    MysqlBackend b;
    auto raw = RawMysql(b.options());
    std::unique_ptr<sql::Statement> st(raw->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery(
        "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('seqd_conv', 'seqd_conv_member', "
        "'seqd_message') ORDER BY TABLE_NAME"));
    std::vector<std::string> names;
    while (rs->next()) {
      names.push_back(rs->getString(1).asStdString());
      CHECK(rs->getString(2).asStdString() == "InnoDB");
      CHECK(rs->getString(3).asStdString() == "utf8mb4_bin");
    }
    CHECK(names == std::vector<std::string>{"seqd_conv", "seqd_conv_member", "seqd_message"});
    rs.reset(st->executeQuery(
        "SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX), MIN(NON_UNIQUE) "
        "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND "
        "TABLE_NAME = 'seqd_message' GROUP BY INDEX_NAME ORDER BY INDEX_NAME"));
    std::map<std::string, std::string> keys;
    while (rs->next()) {
      keys[rs->getString(1).asStdString()] = rs->getString(2).asStdString();
      CHECK(rs->getInt(3) == 0);
    }
    CHECK(keys["PRIMARY"] == "conv_id,seq");
    CHECK(keys["uk_seqd_message_client"] == "conv_id,sender_id,client_msg_id");
    CHECK(keys.count("uk_seqd_message_server_id") == 0);
    CHECK(keys.size() == 2);
  }

  TEST_CASE("mariadb: throughput of the fast path (batches of 1024 over 64 conversations)") {
    MysqlBackend b;
    MessageStore& s = b.store();
    std::vector<std::string> convs;
    for (int i = 0; i < 64; ++i) convs.push_back(UniqueName("tp"));
    const std::string payload(100, 'p');
    MaxSeqCache cache;
    const int kBatches = 30;
    std::vector<std::vector<AppendRequest>> batches(kBatches);
    for (int k = 0; k < kBatches; ++k) {
      for (int i = 0; i < 1024; ++i) {
        batches[k].push_back(
            Req(convs[(k * 1024 + i) % convs.size()], "u", Num("m", k * 1024 + i), payload));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) MustAppend(s, batch, cache);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("fast path, one writer: ", static_cast<int64_t>(kBatches * 1024 / secs),
            " messages/s (", kBatches, " x 1024 in ", secs, " s)");
    for (const auto& c : convs) CHECK(cache[c] == kBatches * 1024 / 64);
  }
}

}  // namespace seqd
