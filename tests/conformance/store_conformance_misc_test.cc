// SegmentStore conformance, suite "misc": store URLs and specs parsed and
// refused, unreachable and hung servers (no database needed).
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
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

// ParseUrl refuses `url` with kInvalidArgument, saying `says`, and never
// shows its password (hunter2).
void CheckUrlRefused(const std::string& url, const std::string& says) {
  INFO(url);
  auto r = MysqlStore::ParseUrl(url);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  CHECK(r.error().message.find(says) != std::string::npos);
  CHECK(r.error().message.find("hunter2") == std::string::npos);
}

}  // namespace

TEST_SUITE("misc") {
  TEST_CASE("MysqlStore::ParseUrl takes TLS options") {
    using Ssl = MysqlOptions::SslMode;
    auto none = MysqlStore::ParseUrl("mysql://u:p@h/d");
    REQUIRE(none.ok());
    CHECK(none->ssl_mode == Ssl::kDefault);
    CHECK(none->ssl_ca.empty());
    auto full = MysqlStore::ParseUrl(
        "mysql://u:p@h/d?ssl-mode=verify_identity&ssl-ca=/etc/ca%20dir/ca.pem"
        "&ssl-cert=/c.pem&ssl-key=/k.pem&rw_timeout=3");
    REQUIRE(full.ok());
    CHECK(full->ssl_mode == Ssl::kVerifyIdentity);
    CHECK(full->ssl_ca == "/etc/ca dir/ca.pem");
    CHECK(full->ssl_cert == "/c.pem");
    CHECK(full->ssl_key == "/k.pem");
    CHECK(full->rw_timeout_s == 3);
    for (auto [text, mode] :
         std::vector<std::pair<std::string, Ssl>>{{"DISABLED", Ssl::kDisabled},
                                                  {"PREFERRED", Ssl::kPreferred},
                                                  {"REQUIRED", Ssl::kRequired},
                                                  {"VERIFY_CA&ssl-ca=/ca.pem", Ssl::kVerifyCa}}) {
      auto r = MysqlStore::ParseUrl("mysql://u:p@h/d?ssl-mode=" + text);
      const std::string& mode_text = text;  // clang 14 cannot capture a binding (REQUIRE_MESSAGE does)
      REQUIRE_MESSAGE(r.ok(), mode_text);
      CHECK(r->ssl_mode == mode);
    }
    for (auto [url, says] : std::vector<std::pair<std::string, std::string>>{
             {"mysql://u:hunter2@h/d?ssl-mode=SOMETIMES", "ssl-mode must be"},
             {"mysql://u:hunter2@h/d?ssl-mode=VERIFY_CA", "need ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-mode=VERIFY_IDENTITY", "need ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-cert=/c.pem", "go together"},
             {"mysql://u:hunter2@h/d?ssl-key=/k.pem", "go together"},
             {"mysql://u:hunter2@h/d?ssl-ca=", "needs a file path"},
             {"mysql://u:hunter2@h/d?ssl-ca=%zz", "malformed %-escape in ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-mode=DISABLED&ssl-ca=/ca.pem", "DISABLED with"},
             {"mysql://u:hunter2@h/d?sslmode=REQUIRED", "unknown parameter"},
         }) {
      CheckUrlRefused(url, says);
    }
  }

  TEST_CASE("MysqlStore::ParseUrl accepts good URLs") {
    auto full = MysqlStore::ParseUrl("mysql://seqd:secret@db.example.com:3307/leaf");
    REQUIRE_OK(full);
    CHECK(full->user == "seqd");
    CHECK(full->password == "secret");
    CHECK(full->hosts == std::vector<MysqlHost>{{"db.example.com", 3307}});
    CHECK(full->database == "leaf");
    CHECK(full->pool_size == 4);

    auto minimal = MysqlStore::ParseUrl("mysql://root@127.0.0.1/seqd_test");
    REQUIRE_OK(minimal);
    CHECK(minimal->user == "root");
    CHECK(minimal->password.empty());
    CHECK(minimal->hosts == std::vector<MysqlHost>{{"127.0.0.1", 3306}});
    CHECK(minimal->database == "seqd_test");

    auto empty_pass = MysqlStore::ParseUrl("mysql://u:@h/d");
    REQUIRE_OK(empty_pass);
    CHECK(empty_pass->password.empty());

    auto escaped = MysqlStore::ParseUrl("mysql://us%40er:p%3Aa%2Fs%25s%40@localhost:1/db");
    REQUIRE_OK(escaped);
    CHECK(escaped->user == "us@er");
    CHECK(escaped->password == "p:a/s%s@");
    CHECK(escaped->hosts == std::vector<MysqlHost>{{"localhost", 1}});

    auto raw_at = MysqlStore::ParseUrl("mysql://u:p@ss@h:65535/d");
    REQUIRE_OK(raw_at);
    CHECK(raw_at->password == "p@ss");
    CHECK(raw_at->hosts == std::vector<MysqlHost>{{"h", 65535}});

    auto tuned =
        MysqlStore::ParseUrl("mysql://u:p@h/d?rw_timeout=2&connect_timeout=1&retry_budget_ms=250");
    REQUIRE(tuned.ok());
    CHECK(tuned->database == "d");
    CHECK(tuned->rw_timeout_s == 2);
    CHECK(tuned->connect_timeout_s == 1);
    CHECK(tuned->retry_budget_ms == 250);
    auto v6 = MysqlStore::ParseUrl("mysql://u:p@[::1]:3308/d");
    REQUIRE_OK(v6);
    CHECK(v6->hosts == std::vector<MysqlHost>{{"::1", 3308}});
  }

  TEST_CASE("MysqlStore::ParseUrl rejects malformed URLs with kInvalidArgument") {
    const char* bad[] = {
        "",
        "mysql://",
        "mysql:/u:p@h/d",
        "postgres://u:p@h:5432/d",
        "MYSQL//u:p@h/d",
        "mysql://h:3306/d",               // no user
        "mysql://:p@h/d",                 // empty user
        "mysql://u:p@/d",                 // empty host
        "mysql://u:p@:3306/d",            // empty host
        "mysql://u:p@h",                  // no database
        "mysql://u:p@h/",                 // empty database
        "mysql://u:p@h:/d",               // empty port
        "mysql://u:p@h:0/d",              // port out of range
        "mysql://u:p@h:65536/d",          // port out of range
        "mysql://u:p@h:-1/d",             // negative port
        "mysql://u:p@h:33o6/d",           // not a number
        "mysql://u:p@h:3306:1/d",         // two ports
        "mysql://u:p@h/d?ssl=1",          // unknown parameter
        "mysql://u:p@h/d?rw_timeout",     // no value
        "mysql://u:p@h/d?rw_timeout=0",   // out of range
        "mysql://u:p@h/d?rw_timeout=5s",  // not a number
        "mysql://u:p@h/d?retry_budget_ms=-1&rw_timeout=2",
        "mysql://u:p@h/d/e",    // path
        "mysql://u:p@h/d%2fe",  // path, escaped
        "mysql://u:p@h/d%00",   // NUL in the database
        "mysql://u:p%zz@h/d",   // bad escape in password
        "mysql://u:p%4@h/d",    // truncated escape
        "mysql://u%g0:p@h/d",   // bad escape in user
        "mysql://u:p@h o/d",    // space in host
        "mysql://u:p@[::1/d",   // unterminated IPv6
    };
    for (const char* url : bad) {
      CAPTURE(url);
      auto r = MysqlStore::ParseUrl(url);
      CHECK_ERR(r, ErrorCode::kInvalidArgument);
      if (!r.ok()) CHECK_FALSE(r.error().message.empty());
    }
    // Errors name the problem but never echo the password.
    auto r = MysqlStore::ParseUrl("mysql://u:hunter2@h:99999/d");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("port") != std::string::npos);
    CHECK(r.error().message.find("hunter2") == std::string::npos);
    r = MysqlStore::ParseUrl("mysql://u:hunter2%zz@h/d");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("password") != std::string::npos);
    CHECK(r.error().message.find("hunter2") == std::string::npos);
  }

  TEST_CASE("MysqlStore::ParseUrl takes a list of hosts") {
    auto three = MysqlStore::ParseUrl("mysql://u:p@h1:3306,h2,[::1]:3308/d?rw_timeout=2");
    REQUIRE_OK(three);
    CHECK(three->hosts == std::vector<MysqlHost>{{"h1", 3306}, {"h2", 3306}, {"::1", 3308}});
    CHECK(three->database == "d");
    CHECK(three->rw_timeout_s == 2);
    CHECK(DescribeMysql(*three) == "u@h1:3306,h2:3306,[::1]:3308/d");
    // The same host on two ports is two servers.
    auto ports = MysqlStore::ParseUrl("mysql://u:p@127.0.0.1:3306,127.0.0.1:3307/d");
    REQUIRE_OK(ports);
    CHECK(ports->hosts.size() == 2);
    std::string sixteen;
    for (int i = 1; i <= 16; ++i) sixteen += (i > 1 ? ",h" : "h") + std::to_string(i);
    auto most = MysqlStore::ParseUrl("mysql://u:p@" + sixteen + "/d");
    REQUIRE_OK(most);
    CHECK(most->hosts.size() == MysqlOptions::kMaxHosts);
    CHECK(most->hosts.back() == MysqlHost{"h16", 3306});

    for (auto [url, says] : std::vector<std::pair<std::string, std::string>>{
             {"mysql://u:hunter2@h1,/d", "host 2 of the list: empty host"},
             {"mysql://u:hunter2@,h2/d", "host 1 of the list: empty host"},
             {"mysql://u:hunter2@h1,,h3/d", "host 2 of the list: empty host"},
             {"mysql://u:hunter2@,/d", "empty host"},
             {"mysql://u:hunter2@h1:3306,h2:/d", "host 2 of the list: empty port"},
             {"mysql://u:hunter2@h1,h2:0/d", "host 2 of the list: port must be"},
             {"mysql://u:hunter2@h1,h2:70000/d", "port must be"},
             {"mysql://u:hunter2@h1:x,h2/d", "host 1 of the list: port must be"},
             {"mysql://u:hunter2@h1,h 2/d", "invalid character"},
             {"mysql://u:hunter2@h1,[::1/d", "unterminated"},
             {"mysql://u:hunter2@h1:3306,h1/d", "host 2 of the list is listed twice"},
             {"mysql://u:hunter2@" + sixteen + ",h17/d", "more than 16 hosts"},
             {"mysql://u:hunter2@h1,h2/d?wsrep_sync_wait=16", "wsrep_sync_wait must be"},
         }) {
      CheckUrlRefused(url, says);
    }
    auto wait = MysqlStore::ParseUrl("mysql://u:p@h1,h2/d?wsrep_sync_wait=3");
    REQUIRE_OK(wait);
    CHECK(wait->wsrep_sync_wait == 3);
    CHECK(MysqlStore::ParseUrl("mysql://u:p@h/d")->wsrep_sync_wait == -1);
  }

  TEST_CASE("MysqlHostOrder: the last good host first, failed hosts last, the latest last") {
    using V = std::vector<size_t>;
    const auto order = [](size_t preferred, std::vector<uint64_t> failed) {
      return MysqlHostOrder(preferred, failed);
    };
    CHECK(order(0, {0}) == V{0});
    CHECK(order(0, {7}) == V{0});  // one host: always tried
    CHECK(order(0, {0, 0, 0}) == V{0, 1, 2});
    CHECK(order(1, {0, 0, 0}) == V{1, 2, 0});  // round the list from the last good one
    CHECK(order(2, {0, 0, 0}) == V{2, 0, 1});
    CHECK(order(0, {5, 0, 0}) == V{1, 2, 0});  // the last good one failed: the next
    CHECK(order(1, {0, 3, 0}) == V{2, 0, 1});
    CHECK(order(0, {5, 0, 4}) == V{1, 2, 0});  // failed ones by failure, earliest first
    CHECK(order(0, {4, 0, 5}) == V{1, 0, 2});
    CHECK(order(1, {2, 1, 3}) == V{1, 0, 2});  // all failed: the earliest failure first
  }

  TEST_CASE("MysqlStore with several hosts: the ones that refuse are passed over") {
    // Two closed ports, then nothing: the error says every host was tried,
    // names each one's failure (for the log) and never the password.
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", ClosedPort()}, {"127.0.0.1", ClosedPort()}};
    while (o.hosts[1].port == o.hosts[0].port) o.hosts[1].port = ClosedPort();
    o.user = "seqd";
    o.password = "hunter2";
    o.database = "seqd_test";
    o.retry_budget_ms = 0;
    MysqlStore store(o);
    const auto start = Clock::now();
    Status st = store.Ping();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kStoreUnavailable);
    CHECK(st.error().message.find("no host of 2") != std::string::npos);
    for (const MysqlHost& h : o.hosts) {
      CHECK(st.error().message.find("127.0.0.1:" + std::to_string(h.port)) != std::string::npos);
    }
    CHECK(st.error().message.find("hunter2") == std::string::npos);
    CHECK(Clock::now() - start < std::chrono::seconds(2));
  }

  TEST_CASE("OpenStore rejects bad specs and opens good ones") {
    for (const char* spec : {"", "sqlite", "sqlite:", "foo:bar", "/tmp/x.db", "postgres://u@h/d",
                             "SQLITE:/tmp/x.db", "mysql:/u:p@h/d"}) {
      CAPTURE(spec);
      auto r = OpenStore(spec);
      CHECK_ERR(r, ErrorCode::kInvalidArgument);
      if (!r.ok()) {
        CHECK(r.error().message.find("--store") != std::string::npos);
      }
    }
    auto unknown = OpenStore("foo:bar");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message ==
          "--store: expected sqlite:PATH or mysql://user:pass@host:port/db, got 'foo:bar'");

    auto bad_mysql = OpenStore("mysql://u:hunter2@h:0/d");
    CHECK_ERR(bad_mysql, ErrorCode::kInvalidArgument);
    if (!bad_mysql.ok()) CHECK(bad_mysql.error().message.find("hunter2") == std::string::npos);

    const fs::path dir = MakeTempDir("seqd-conformance-");
    {
      auto sqlite = OpenStore("sqlite:" + (dir / "a" / "b" / "seqd.db").string());
      REQUIRE_OK(sqlite);
      const std::string k = UniqueName("factory");
      REQUIRE_OK((*sqlite)->CreateKey(k, 5, ""));  // EnsureSchema already ran
      CheckSegment((*sqlite)->Reserve(k, std::nullopt), 1, 5, 5);
    }
    fs::remove_all(dir);

    // A MySQL spec does not connect: no server is needed to get a store.
    const auto start = Clock::now();
    auto mysql = OpenStore("mysql://u:p@127.0.0.1:" + std::to_string(ClosedPort()) + "/d");
    REQUIRE_OK(mysql);
    CHECK(Clock::now() - start < std::chrono::seconds(1));
    CHECK_ERR((*mysql)->Ping(), ErrorCode::kStoreUnavailable);
  }

  TEST_CASE("MysqlStore against a closed port: kStoreUnavailable within seconds") {
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", ClosedPort()}};
    o.user = "seqd";
    o.password = "hunter2";
    o.database = "seqd_test";
    o.pool_size = 2;
    MysqlStore store(o);
    const auto start = Clock::now();
    auto ping = store.Ping();
    CHECK_ERR(ping, ErrorCode::kStoreUnavailable);
    if (!ping.ok()) {
      MESSAGE("closed port error: ", ping.error().message);
      CHECK(ping.error().message.find("hunter2") == std::string::npos);
      CHECK(ping.error().message.find("200") != std::string::npos);  // MySQL error 200x
    }
    CHECK_ERR(store.EnsureSchema(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.Reserve("k", std::nullopt), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.CreateKey("k", 1, ""), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.GetKey("k"), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.ListKeys("", 10), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.SetStep("k", 2), ErrorCode::kStoreUnavailable);
    // Many callers at once with a pool of 2: nobody hangs, the pool recovers.
    std::vector<std::thread> threads;
    std::atomic<int> unavailable{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 5; ++i) {
          auto r = store.Reserve("k", 10);
          if (!r.ok() && r.error().code == ErrorCode::kStoreUnavailable) ++unavailable;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(unavailable == 40);
    CHECK(Clock::now() - start < std::chrono::seconds(5));
  }

  TEST_CASE("MysqlStore against a server that never answers: bounded by the timeouts") {
    const SilentServer silent;
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", silent.port()}};
    o.user = "seqd";
    o.database = "seqd_test";
    o.connect_timeout_s = 1;
    o.rw_timeout_s = 1;
    MysqlStore store(o);
    const auto start = Clock::now();
    auto r = store.Reserve("k", std::nullopt);
    const auto took = Clock::now() - start;
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) MESSAGE("silent server error: ", r.error().message);
    MESSAGE("silent server detected in ",
            std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
    CHECK(took < std::chrono::seconds(10));
  }
}

}  // namespace seqd
