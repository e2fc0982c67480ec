// The WorkerLeaseStore backends the conformance checks run on (memory on a
// manual clock, SQLite and MariaDB on their real clocks), and the helpers
// the checks and suites share.
//
// Test-only; include after <doctest/doctest.h>. Not thread-safe unless
// noted: a backend is driven by one test thread.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/memory/memory_worker_lease_store.h"
#include "storage/mysql/mysql_worker_lease_store.h"
#include "storage/sqlite/sqlite_worker_lease_store.h"
#include "storage/worker_lease_store.h"
#include "tests/conformance/conformance_support.h"

namespace seqd::lease_conformance {

using namespace conformance;

// A lease that does not run out during a test.
constexpr int64_t kLongTtlMs = 60000;

inline int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline ClaimRequest Req(const std::string& owner, const std::string& instance, int max_workers = 16,
                        int64_t ttl_ms = kLongTtlMs) {
  ClaimRequest r;
  r.owner = owner;
  r.instance = instance;
  r.max_workers = max_workers;
  r.ttl_ms = ttl_ms;
  return r;
}

// Claims, requiring success.
inline WorkerLease MustClaim(WorkerLeaseStore& s, const ClaimRequest& r) {
  auto l = s.Claim(r);
  REQUIRE_MESSAGE(l.ok(), "Claim(", r.owner, ", ", r.instance, ") -> ", Describe(l));
  return std::move(l).value();
}

inline std::vector<WorkerLease> MustList(WorkerLeaseStore& s) {
  auto rows = s.List();
  REQUIRE_MESSAGE(rows.ok(), "List -> ", Describe(rows));
  return std::move(rows).value();
}

// The row of `worker_id` in List(); fails the test if there is none.
inline WorkerLease RowOf(WorkerLeaseStore& s, int worker_id) {
  for (const WorkerLease& l : MustList(s)) {
    if (l.worker_id == worker_id) return l;
  }
  FAIL("no row for worker id ", worker_id);
  return WorkerLease{};
}

// The call failed with `code` and exactly `message`.
template <typename T>
inline void CheckError(const Result<T>& r, ErrorCode code, const std::string& message) {
  REQUIRE_MESSAGE(!r.ok(), "unexpectedly succeeded, wanted: ", message);
  CHECK_MESSAGE(r.error().code == code, Describe(r.error()), " (wanted ",
                std::string(ErrorCodeName(code)), ")");
  CHECK(r.error().message == message);
}

// Non-owning WorkerLeaseStore forwarding to another: a second "instance" of
// the memory store, which cannot be shared otherwise.
class ForwardingLeaseStore final : public WorkerLeaseStore {
 public:
  explicit ForwardingLeaseStore(WorkerLeaseStore& inner) : in_(inner) {}
  Status EnsureSchema() override { return in_.EnsureSchema(); }
  Result<WorkerLease> Claim(const ClaimRequest& r) override { return in_.Claim(r); }
  Result<WorkerLease> Renew(int id, std::string_view inst, int64_t ttl, int64_t tb) override {
    return in_.Renew(id, inst, ttl, tb);
  }
  Status Release(int id, std::string_view inst, int64_t tb) override {
    return in_.Release(id, inst, tb);
  }
  Result<std::vector<WorkerLease>> List() override { return in_.List(); }

 private:
  WorkerLeaseStore& in_;
};

// A new instance stands for another "process".
class Backend : public StoreBackend<WorkerLeaseStore> {
 public:
  // A ttl short enough to wait out, and letting the store clock move past
  // it: Elapse(short_ttl()) expires a lease claimed with it.
  virtual int64_t short_ttl() const = 0;
  virtual void Elapse(int64_t ms) = 0;
  // What the store clock should read now, and how far it may be off.
  virtual int64_t ExpectedNow() const = 0;
  virtual int64_t clock_slack_ms() const = 0;
};

class MemoryBackend final : public Backend {
 public:
  MemoryBackend() : store_([this] { return now_.load(); }) {}
  WorkerLeaseStore& store() override { return store_; }
  std::unique_ptr<WorkerLeaseStore> NewInstance() override {
    return std::make_unique<ForwardingLeaseStore>(store_);
  }
  int64_t short_ttl() const override { return 300; }
  void Elapse(int64_t ms) override { now_ += ms + 1; }
  int64_t ExpectedNow() const override { return now_.load(); }
  int64_t clock_slack_ms() const override { return 0; }

 private:
  std::atomic<int64_t> now_{1700000000000};
  MemoryWorkerLeaseStore store_;  // after now_: its clock reads it
};

// Real clocks: sleep past the ttl with a margin.
class RealClockBackend : public Backend {
 public:
  int64_t short_ttl() const override { return 500; }
  void Elapse(int64_t ms) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms + 150));
  }
  int64_t ExpectedNow() const override { return SystemNowMs(); }
  int64_t clock_slack_ms() const override { return 5000; }
};

inline std::unique_ptr<SqliteWorkerLeaseStore> OpenSqlite(const std::string& path) {
  auto s = SqliteWorkerLeaseStore::Open(path);
  REQUIRE_MESSAGE(s.ok(), "SqliteWorkerLeaseStore::Open(", path, ") -> ", Describe(s));
  REQUIRE_OK((*s)->EnsureSchema());
  return std::move(s).value();
}

class SqliteBackend final
    : public SqliteFileBackend<RealClockBackend, WorkerLeaseStore, SqliteWorkerLeaseStore> {
 public:
  SqliteBackend() : SqliteFileBackend("seqd-leaseconf-", "seqd.db", OpenSqlite) {}
};

// Starts with no leases: the table is emptied.
class MysqlBackend final
    : public MysqlServerBackend<RealClockBackend, WorkerLeaseStore, MysqlWorkerLeaseStore> {
 public:
  MysqlBackend() {
    auto raw = RawMysql(opts_);
    RawExec(*raw, "DELETE FROM seqd_worker_lease");
  }
};

// The store clock reading `now_ms` is what the backend expects.
inline void CheckStoreNow(Backend& b, int64_t now_ms) {
  const int64_t want = b.ExpectedNow();
  CHECK_MESSAGE(now_ms >= want - b.clock_slack_ms(), "store now ", now_ms, " vs ", want);
  CHECK_MESSAGE(now_ms <= want + b.clock_slack_ms(), "store now ", now_ms, " vs ", want);
}

}  // namespace seqd::lease_conformance
