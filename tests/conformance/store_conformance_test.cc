// Conformance suite for SegmentStore implementations.
//
// The same checks (segment_checks.h) run against every backend
// (segment_backends.h), each in its own doctest suite:
//   memory, sqlite        -> ctest store_conformance (this file)
//   mariadb               -> ctest store_conformance_mariadb
//                            (store_conformance_mariadb_test.cc); needs
//                            SEQD_TEST_MYSQL_URL (see scripts/mariadb.sh) and
//                            fails, not skips, without it
//   misc                  -> URL/spec parsing and unreachable-server checks
//                            (no database needed; store_conformance_misc_test.cc)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"
#include "storage/sqlite/sqlite_store.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/segment_checks.h"

namespace seqd {
namespace {

using namespace conformance;
using Clock = std::chrono::steady_clock;

// Forks `procs` children; child p exits with child(p) (no doctest macros
// there: the exit code reports). Checks that every child exited 0.
template <typename Child>
void CheckChildrenSucceed(int procs, Child child) {
  std::vector<pid_t> pids;
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(child(p));
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

}  // namespace

// ================================================================ suites

TEST_SUITE("memory"){SEQD_CONFORMANCE_CASES(MemoryBackend, "memory")}

TEST_SUITE("groups"){SEQD_CONFORMANCE_CASES(GroupedBackend, "two groups")}

TEST_SUITE("sqlite") {
  SEQD_CONFORMANCE_CASES(SqliteBackend, "sqlite")

  TEST_CASE("sqlite: 4 processes share one file without overlapping segments") {
    // No SQLite connection may be open across fork(): set up, then close.
    const fs::path out_dir = MakeTempDir("seqd-conformance-");
    const std::string path = (out_dir / "shared.db").string();
    const std::string k = UniqueName("multiproc");
    {
      auto setup = OpenSqlite(path);
      REQUIRE_OK(setup->EnsureSchema());
      REQUIRE_OK(setup->CreateKey(k, 10, ""));
    }
    constexpr int kProcs = 4;
    constexpr int kPerProc = 50;
    CheckChildrenSucceed(kProcs, [&](int p) {
      // Reports its segments through a file.
      SqliteStore store(path);
      std::ofstream out(out_dir / ("segments." + std::to_string(p)));
      int failures = 0;
      for (int i = 0; i < kPerProc; ++i) {
        auto r = store.Reserve(k, std::nullopt);
        if (r.ok()) {
          out << r->first << " " << r->last << "\n";
        } else {
          ++failures;
        }
      }
      out.close();
      return failures == 0 ? 0 : 1;
    });
    std::vector<std::pair<int64_t, int64_t>> segs;
    for (int p = 0; p < kProcs; ++p) {
      std::ifstream in(out_dir / ("segments." + std::to_string(p)));
      int64_t first = 0, last = 0;
      while (in >> first >> last) segs.emplace_back(first, last);
    }
    REQUIRE(segs.size() == kProcs * kPerProc);
    std::sort(segs.begin(), segs.end());
    CHECK(segs.front().first == 1);
    for (size_t i = 1; i < segs.size(); ++i) CHECK(segs[i].first == segs[i - 1].second + 1);
    CHECK(segs.back().second == kProcs * kPerProc * 10);
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }

  TEST_CASE("sqlite: processes opening one NEW file at the same moment all succeed") {
    // Turning a new file to WAL takes an exclusive lock that SQLite does not
    // wait for: seqd processes started together must retry, not fail.
    const fs::path out_dir = MakeTempDir("seqd-conformance-");
    for (int round = 0; round < 20; ++round) {
      const std::string path = (out_dir / ("new." + std::to_string(round) + ".db")).string();
      constexpr int kProcs = 6;
      CheckChildrenSucceed(kProcs, [&](int) {
        auto store = SqliteStore::Open(path);
        return store.ok() && store.value()->EnsureSchema().ok() ? 0 : 1;
      });
    }
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }

  TEST_CASE("sqlite: unopenable path gives kStoreUnavailable, not a crash") {
    auto opened = SqliteStore::Open("/proc/seqd-no-such-dir/leaf.db");
    CHECK_ERR(opened, ErrorCode::kStoreUnavailable);
    SqliteStore lazy("/proc/seqd-no-such-dir/leaf.db");  // constructor never fails
    CHECK_ERR(lazy.Ping(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(lazy.Reserve("k", std::nullopt), ErrorCode::kStoreUnavailable);
    CHECK_ERR(lazy.EnsureSchema(), ErrorCode::kStoreUnavailable);
  }

  TEST_CASE("sqlite: a held write lock makes Reserve wait, then kStoreUnavailable") {
    SqliteBackend b;
    const std::string k = UniqueName("locked");
    REQUIRE_OK(b.store().CreateKey(k, 10, ""));
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(b.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto start = Clock::now();
    auto r = b.store().Reserve(k, std::nullopt);
    const auto waited = Clock::now() - start;
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) CHECK(r.error().message.find("reserve") != std::string::npos);
    CHECK(waited >= std::chrono::milliseconds(4500));
    CHECK(waited < std::chrono::seconds(15));
    // While the lock is held, another writer finishing its wait succeeds.
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    });
    CheckSegment(b.store().Reserve(k, std::nullopt), 1, 10, 10);
    releaser.join();
    sqlite3_close(db);
  }
}

}  // namespace seqd
