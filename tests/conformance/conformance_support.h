// Helpers shared by the conformance suites (store_conformance_test.cc and
// message_store_conformance_test.cc): error printing, REQUIRE_OK/CHECK_ERR,
// unique names, temporary directories, the MariaDB under test
// (SEQD_TEST_MYSQL_URL) and raw connections to it for setup and KILL.
//
// Include after <doctest/doctest.h> (and after DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
// where the test defines it). Test-only; not thread-safe unless noted.
#pragma once

#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store.h"

namespace seqd::conformance {

namespace fs = std::filesystem;

inline std::string Describe(const Error& e) {
  return std::string(ErrorCodeName(e.code)) + ": " + e.message;
}

template <typename T>
std::string Describe(const Result<T>& r) {
  return r.ok() ? std::string("ok") : Describe(r.error());
}

#define REQUIRE_OK(expr)                                                                 \
  do {                                                                                   \
    const auto& seqd_r_ = (expr);                                                        \
    REQUIRE_MESSAGE(seqd_r_.ok(), #expr " -> ", ::seqd::conformance::Describe(seqd_r_)); \
  } while (0)

#define CHECK_ERR(expr, want)                                            \
  do {                                                                   \
    const auto& seqd_r_ = (expr);                                        \
    CHECK_MESSAGE(!seqd_r_.ok(), #expr " unexpectedly succeeded");       \
    if (!seqd_r_.ok()) {                                                 \
      CHECK_MESSAGE(seqd_r_.error().code == (want), #expr " -> ",        \
                    ::seqd::conformance::Describe(seqd_r_), " (wanted ", \
                    std::string(::seqd::ErrorCodeName(want)), ")");      \
    }                                                                    \
  } while (0)

// Differs between runs, so rows left by earlier runs (MariaDB) never collide.
inline const std::string& RunId() {
  static const std::string id = [] {
    std::random_device rd;
    std::ostringstream os;
    os << std::hex << (static_cast<uint64_t>(rd()) << 32 | rd());
    return os.str();
  }();
  return id;
}

// prefix + n (GCC 12 warns falsely on "literal" + std::to_string(n)).
inline std::string Num(std::string prefix, int64_t n) {
  prefix += std::to_string(n);
  return prefix;
}

// "t<run id>-<base>-<n>", unique in this process and across runs. Lower-case
// as long as `base` is: MySQL's default collation is case-insensitive.
// Thread-safe.
inline std::string UniqueName(const std::string& base) {
  static std::atomic<int> counter{0};
  return "t" + RunId() + "-" + base + Num("-", counter++);
}

// A new directory $TMPDIR/<prefix>XXXXXX (default /tmp).
inline fs::path MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  REQUIRE(mkdtemp(buf.data()) != nullptr);
  return fs::path(buf.data());
}

// MakeTempDir, removed with its contents when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) : path_(MakeTempDir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Checks a store factory (`open(spec)`, as OpenMessageStore) refuses bad
// specs with kInvalidArgument, naming no password of a bad MySQL URL, and
// returns the store a reachable-looking MySQL URL names without connecting
// (it is unreachable: the caller checks that its calls say so).
template <typename Open>
auto CheckSpecsAndOpenUnreachableMysql(Open open) {
  for (const char* bad : {"", "memory", "memory:x", "sqlite:", "postgres://u@h/db", "bogus"}) {
    CAPTURE(bad);
    CHECK_ERR(open(bad), ErrorCode::kInvalidArgument);
  }
  auto bad_url = open("mysql://user:s3cretpw@host:notaport/db");
  CHECK_ERR(bad_url, ErrorCode::kInvalidArgument);
  if (!bad_url.ok()) CHECK(bad_url.error().message.find("s3cretpw") == std::string::npos);

  auto my = open("mysql://user:pw@127.0.0.1:1/db");
  REQUIRE_OK(my);
  return std::move(my).value();
}

// What every suite's backend gives, over stores of type `Interface`: the
// main instance, and another instance (its own connection) on the same data.
template <typename Interface>
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual Interface& store() = 0;
  virtual std::unique_ptr<Interface> NewInstance() = 0;
};

// The SQLite part of a suite's backend (`Base`, whose store() and
// NewInstance() give an `Interface`): a `Store` on the file sub/FILE in a
// temporary directory of its own, opened by `open(path)` (which REQUIREs
// it opened; the store makes sub/), and NewInstance() opens another on the
// same file. The directory is removed after the store closed.
template <typename Base, typename Interface, typename Store>
class SqliteFileBackend : public Base {
 public:
  using Open = std::unique_ptr<Store> (*)(const std::string& path);
  SqliteFileBackend(const std::string& dir_prefix, const std::string& file, Open open)
      : open_(open),
        dir_(dir_prefix),
        path_((dir_.path() / "sub" / file).string()),
        store_(open_(path_)) {}
  Interface& store() override { return *store_; }
  std::unique_ptr<Interface> NewInstance() override { return open_(path_); }
  const std::string& path() const { return path_; }

 protected:
  const Open open_;
  TempDir dir_;  // before the store: removed after the store closed
  std::string path_;
  std::unique_ptr<Store> store_;
};

// The options of the MariaDB under test, from SEQD_TEST_MYSQL_URL, with a
// pool of 2. Fails the test (never skips) when the variable is unset.
inline MysqlOptions TestMysqlOptions() {
  const char* url = std::getenv("SEQD_TEST_MYSQL_URL");
  REQUIRE_MESSAGE((url != nullptr && *url != '\0'),
                  "SEQD_TEST_MYSQL_URL is not set: start a server with `scripts/mariadb.sh start "
                  "DIR` and export the URL it prints (mysql://seqd:seqd@127.0.0.1:PORT/seqd_test)");
  auto opts = MysqlStore::ParseUrl(url);
  REQUIRE_MESSAGE(opts.ok(), "SEQD_TEST_MYSQL_URL: ", Describe(opts));
  opts->pool_size = 2;
  return *opts;
}

// The options of `all`, on its host `i` only (one node of a Galera cluster
// whose nodes the URL lists).
inline MysqlOptions OnHost(MysqlOptions all, size_t i) {
  REQUIRE_MESSAGE(all.hosts.size() > i, "SEQD_TEST_MYSQL_URL lists ", all.hosts.size(),
                  " hosts; this check needs at least ", i + 1, " nodes of one Galera cluster");
  all.hosts = {all.hosts[i]};
  return all;
}

// Raw Connector/C++ connection for test setup, outside the store: to the
// first host of `o` (where a store on these options connects first), or,
// under tests/faults/mysql_fault_relay.py, straight to the server behind it
// (SEQD_TEST_MYSQL_DIRECT, HOST:PORT): the relay's faults are the store's.
inline std::unique_ptr<sql::Connection> RawMysql(const MysqlOptions& o) {
  sql::ConnectOptionsMap props;
  const char* direct = std::getenv("SEQD_TEST_MYSQL_DIRECT");
  props["hostName"] = direct && *direct ? "tcp://" + std::string(direct)
                                        : "tcp://" + o.hosts.front().host + ":" +
                                              std::to_string(o.hosts.front().port);
  props["userName"] = o.user;
  props["password"] = o.password;
  props["schema"] = o.database;
  props["OPT_CONNECT_TIMEOUT"] = 5;
  try {
    return std::unique_ptr<sql::Connection>(MysqlDriver()->connect(props));
  } catch (const sql::SQLException& e) {
    FAIL("raw MySQL connect failed: ", std::string(e.what()), " (", e.getErrorCode(), ")");
  }
  return nullptr;
}

inline void RawExec(sql::Connection& c, const std::string& sql) {
  try {
    std::unique_ptr<sql::Statement> s(c.createStatement());
    s->execute(sql);
  } catch (const sql::SQLException& e) {
    FAIL("raw MySQL '", sql, "' failed: ", std::string(e.what()), " (", e.getErrorCode(), ")");
  }
}

// Ids of `user`'s connections other than `raw`'s own.
inline std::vector<int64_t> OtherConnectionIds(sql::Connection& raw, const std::string& user) {
  std::vector<int64_t> ids;
  std::unique_ptr<sql::Statement> st(raw.createStatement());
  std::unique_ptr<sql::ResultSet> rs(
      st->executeQuery("SELECT ID FROM information_schema.PROCESSLIST WHERE USER='" + user +
                       "' AND ID<>CONNECTION_ID()"));
  while (rs->next()) ids.push_back(rs->getInt64(1));
  return ids;
}

// KILLs the connections `ids`; those already gone (1094) are fine.
inline void KillConnections(sql::Connection& raw, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    try {
      std::unique_ptr<sql::Statement> st(raw.createStatement());
      st->execute("KILL " + std::to_string(id));
    } catch (const sql::SQLException&) {
    }
  }
}

// Raw connections to every host of `o` (one server, or a Galera cluster's
// nodes), so a store's connections are found and KILLed on whichever host
// holds them (after a KILL, a store with several hosts reconnects to the
// next one).
class RawHosts {
 public:
  using ConnId = std::pair<size_t, int64_t>;  // (host index, connection id)

  explicit RawHosts(const MysqlOptions& o) {
    for (const MysqlHost& h : o.hosts) {
      MysqlOptions one = o;
      one.hosts = {h};
      raws_.push_back(RawMysql(one));
    }
  }
  // `user`'s connections other than ours, on every host.
  std::vector<ConnId> OtherIds(const std::string& user) const {
    std::vector<ConnId> out;
    for (size_t i = 0; i < raws_.size(); ++i) {
      for (int64_t id : OtherConnectionIds(*raws_[i], user)) out.emplace_back(i, id);
    }
    return out;
  }
  void Kill(const std::vector<ConnId>& ids) const {
    for (const auto& [host, id] : ids) KillConnections(*raws_[host], {id});
  }
  // Makes a store's pool hold two connections at once (runs `touch`, a call
  // into the store, on another thread and on this one together), then KILLs
  // `user`'s connections other than ours and returns their ids. REQUIREs
  // that there were some. `touch` must be safe to run on two threads.
  template <typename Touch>
  std::vector<ConnId> KillHeld(const std::string& user, Touch touch) const {
    std::thread other(touch);
    touch();
    other.join();
    std::vector<ConnId> ids = OtherIds(user);
    REQUIRE_MESSAGE(!ids.empty(), "no connections of ", user, " to KILL");
    Kill(ids);
    return ids;
  }

 private:
  std::vector<std::unique_ptr<sql::Connection>> raws_;
};

// The MariaDB part of a suite's backend (`Base`, whose store() and
// NewInstance() give an `Interface`): a `Store` on the MariaDB under test
// (TestMysqlOptions) with its schema ensured, and NewInstance() another
// made the same way.
template <typename Base, typename Interface, typename Store>
class MysqlServerBackend : public Base {
 public:
  MysqlServerBackend() : opts_(TestMysqlOptions()), store_(OpenStore(opts_)) {}
  Interface& store() override { return *store_; }
  std::unique_ptr<Interface> NewInstance() override { return OpenStore(opts_); }
  const MysqlOptions& options() const { return opts_; }

 protected:
  static std::unique_ptr<Store> OpenStore(const MysqlOptions& o) {
    auto s = std::make_unique<Store>(o);
    REQUIRE_OK(s->EnsureSchema());
    return s;
  }

  MysqlOptions opts_;
  std::unique_ptr<Store> store_;
};

}  // namespace seqd::conformance
