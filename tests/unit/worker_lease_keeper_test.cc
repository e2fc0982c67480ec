// WorkerLeaseKeeper with the in-memory lease store, a manual database
// runner, a manual steady clock and a manual wall clock (which is also the
// store's clock): lease expiry, takeover and release, step by step.
#include "server/snowflake/worker_lease_keeper.h"

#include <doctest/doctest.h>

#include <atomic>
#include <optional>

#include "server/base/manual_clock.h"
#include "storage/memory/memory_worker_lease_store.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000;

// Passes calls through to a shared store, or fails them as if the database
// were unreachable from this process.
class SwitchableLeaseStore final : public WorkerLeaseStore {
 public:
  explicit SwitchableLeaseStore(WorkerLeaseStore& inner) : inner_(inner) {}
  std::atomic<bool> down{false};
  std::atomic<bool> renew_fails{false};  // claims work, renewals do not

  Status EnsureSchema() override { return inner_.EnsureSchema(); }
  Result<WorkerLease> Claim(const ClaimRequest& r) override {
    if (down) return Down();
    return inner_.Claim(r);
  }
  Result<WorkerLease> Renew(int id, std::string_view instance, int64_t ttl_ms,
                            int64_t bound) override {
    if (down || renew_fails) return Down();
    return inner_.Renew(id, instance, ttl_ms, bound);
  }
  Status Release(int id, std::string_view instance, int64_t bound) override {
    if (down) return Down();
    return inner_.Release(id, instance, bound);
  }
  Result<std::vector<WorkerLease>> List() override { return inner_.List(); }

 private:
  static Error Down() { return MakeError(ErrorCode::kStoreUnavailable, "store is down"); }
  WorkerLeaseStore& inner_;
};

// The world several processes share: one store, one wall clock, one steady
// clock, one database runner.
struct World {
  ManualWallClock wall{kT0};
  ManualClock clock;
  ManualRunner db;
  MemoryWorkerLeaseStore store{[this] { return wall.NowMs(); }};

  void Tick(int64_t ms) {
    for (int64_t i = 0; i < ms; ++i) {
      wall.Advance(1);
      clock.Advance(1ms);
      db.RunAll();
    }
  }
  std::optional<WorkerLease> Row(int id) {
    auto rows = store.List();
    REQUIRE(rows.ok());
    for (const WorkerLease& l : *rows) {
      if (l.worker_id == id) return l;
    }
    return std::nullopt;
  }
};

// A host's wall clock: the world's plus a fixed skew.
class SkewedWallClock final : public WallClock {
 public:
  SkewedWallClock(const WallClock& base, int64_t skew_ms) : base_(base), skew_ms_(skew_ms) {}
  int64_t NowUs() const override { return base_.NowUs() + skew_ms_ * 1000; }

 private:
  const WallClock& base_;
  const int64_t skew_ms_;
};

// One seqd process: its wall clock, its view of the store, its generator
// and keeper.
struct Process {
  SkewedWallClock wall;
  SwitchableLeaseStore store;
  SnowflakeGenerator gen;
  WorkerLeaseKeeper keeper;

  Process(World& w, std::string owner, int max_workers = 4, int64_t skew_ms = 0)
      : wall(w.wall, skew_ms),
        store(w.store),
        gen(wall, w.clock, SnowflakeOptions{}),
        keeper(store, w.db, w.clock, wall, gen,
               LeaseKeeperOptions{std::move(owner), max_workers, 3000ms, 100ms}) {}

  // One ID now, or the error.
  Result<int64_t> Next() {
    std::optional<Result<int64_t>> out;
    gen.Next(1, [&](Result<SnowflakeIds> r) {
      if (r) {
        out.emplace(r->front());
      } else {
        out.emplace(r.error());
      }
    });
    REQUIRE(out);  // no test here makes a request wait
    return *out;
  }
};

}  // namespace

TEST_CASE("lease keeper: claims an id, persists the bound, then serves") {
  World w;
  Process p(w, "host-a:8080");
  CHECK_FALSE(p.Next().ok());  // nothing before the claim
  p.keeper.Start();
  w.db.RunAll();
  REQUIRE(p.gen.status().serving);
  CHECK(p.keeper.status().worker_id == 0);
  auto id = p.Next();
  REQUIRE(id.ok());
  CHECK(p.gen.Decode(*id)->worker == 0);
  auto row = w.Row(0);
  REQUIRE(row);
  CHECK(row->owner == "host-a:8080");
  CHECK(row->instance == p.keeper.instance());
  CHECK(row->time_bound_ms == kT0 + 3000);  // wall + ttl, persisted before issuing
  CHECK(row->expires_ms == kT0 + 3000);

  // Renewed every ttl/3: the lease and the bound move with the clock.
  w.Tick(1000);
  CHECK(w.Row(0)->expires_ms == kT0 + 1000 + 3000);
  CHECK(w.Row(0)->time_bound_ms == kT0 + 1000 + 3000);
  w.Tick(10'000);
  CHECK(p.gen.status().serving);
  CHECK(w.Row(0)->expires_ms >= kT0 + 11'000 + 2000);
}

TEST_CASE("lease keeper: a second process gets another id; ids run out cleanly") {
  World w;
  Process a(w, "host-a:8080", /*max_workers=*/2), b(w, "host-b:8080", 2), c(w, "host-c:8080", 2);
  a.keeper.Start();
  b.keeper.Start();
  c.keeper.Start();
  w.db.RunAll();
  CHECK(a.keeper.status().worker_id == 0);
  CHECK(b.keeper.status().worker_id == 1);
  CHECK(c.keeper.status().worker_id == -1);
  auto refused = c.Next();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kNotServing);
  CHECK(refused.error().message ==
        "no worker id leased: claiming a worker id: all 2 worker ids are leased");
  CHECK(c.keeper.status().last_error.find("all 2 worker ids are leased") != std::string::npos);
}

TEST_CASE("lease keeper: store down past the lease stops IDs before anyone can take over") {
  World w;
  // A's wall clock runs 2 s ahead of B's (and of the store's): the store's
  // clock decides the lease, the persisted bound keeps B's IDs above A's.
  Process a(w, "host-a:8080", /*max_workers=*/1, /*skew_ms=*/2000), b(w, "host-b:8080", 1);
  a.keeper.Start();
  w.db.RunAll();
  b.keeper.Start();  // keeps retrying: the only id is taken
  w.db.RunAll();
  REQUIRE(a.gen.status().serving);
  REQUIRE_FALSE(b.gen.status().serving);

  auto last_a = a.Next();
  REQUIRE(last_a.ok());
  a.store.down = true;  // A can no longer reach the database; B still can
  // A's last successful renewal was sent at t=0: it may issue until
  // 0 + ttl - ttl/10 = 2700 ms. The store expires the row at 3000 ms.
  w.Tick(2699);
  CHECK(a.gen.status().serving);
  auto still = a.Next();
  REQUIRE(still.ok());
  last_a = still;
  w.Tick(1);
  CHECK_FALSE(a.gen.status().serving);
  auto stopped = a.Next();
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().message.find("not renewed in time") != std::string::npos);
  w.Tick(299);
  CHECK(b.keeper.status().worker_id == -1);  // the row has not expired yet

  // After the expiry B takes the id over, but waits until its clock passes
  // the bound A persisted (A's clock + ttl, 2 s ahead of B's).
  w.Tick(101);
  REQUIRE(b.keeper.status().worker_id == 0);
  CHECK(w.Row(0)->instance == b.keeper.instance());
  const int64_t a_bound = kT0 + 2000 + 3000;
  CHECK(b.gen.status().not_before_ms == a_bound);
  CHECK(a.gen.Decode(*last_a)->time_ms > b.wall.NowMs());  // A's IDs are "in B's future"
  auto early = b.Next();
  REQUIRE_FALSE(early.ok());  // the wait is longer than the 1 s deadline
  CHECK(early.error().message.find("waiting for the clock to pass") != std::string::npos);
  w.Tick(a_bound - b.wall.NowMs() + 1);
  auto b_first = b.Next();
  REQUIRE(b_first.ok());
  CHECK(*b_first > *last_a);
  CHECK(b.gen.Decode(*b_first)->time_ms > a_bound);

  // A's database comes back: its renewal is refused (taken over), so it
  // drops the id and cannot claim another (the only one is B's).
  a.store.down = false;
  w.Tick(200);
  CHECK(a.keeper.status().worker_id == -1);
  CHECK_FALSE(a.gen.status().serving);
  CHECK(a.gen.status().why_not.find("all 1 worker ids are leased") != std::string::npos);
  CHECK(a.keeper.status().last_error.find("all 1 worker ids are leased") != std::string::npos);
  CHECK(b.gen.status().serving);
}

TEST_CASE("lease keeper: a lease that ran out but was not taken over is renewed again") {
  World w;
  Process a(w, "host-a:8080");
  a.keeper.Start();
  w.db.RunAll();
  a.store.down = true;
  w.Tick(5000);  // well past the expiry; nobody else wanted the id
  CHECK_FALSE(a.gen.status().serving);
  a.store.down = false;
  w.Tick(150);
  CHECK(a.gen.status().serving);
  CHECK(a.keeper.status().worker_id == 0);
  CHECK(a.Next().ok());
}

TEST_CASE("lease keeper: release keeps the id for the same owner with its exact last time") {
  World w;
  auto a = std::make_unique<Process>(w, "host-a:8080");
  Process c(w, "host-c:8080");
  a->keeper.Start();
  w.db.RunAll();
  c.keeper.Start();
  w.db.RunAll();
  REQUIRE(a->keeper.status().worker_id == 0);
  REQUIRE(c.keeper.status().worker_id == 1);
  w.Tick(5);
  auto last = a->Next();
  REQUIRE(last.ok());
  const int64_t last_time = a->gen.Decode(*last)->time_ms;
  a->gen.Shutdown();
  a->keeper.Stop();
  w.db.RunAll();
  CHECK(w.Row(0)->expires_ms == 0);
  CHECK(w.Row(0)->time_bound_ms == last_time);  // lowered from wall + ttl to the exact time
  // `a` stays alive: its renewal timer is still in the clock (a stopped
  // keeper's Tick does nothing).

  // Another owner does not get id 0 while a never-used id is free.
  Process d(w, "host-d:8080");
  d.keeper.Start();
  w.db.RunAll();
  CHECK(d.keeper.status().worker_id == 2);

  // The same host:port, restarted: id 0 again, serving at once.
  w.Tick(1);
  Process a2(w, "host-a:8080");
  a2.keeper.Start();
  w.db.RunAll();
  CHECK(a2.keeper.status().worker_id == 0);
  CHECK(a2.gen.status().not_before_ms == last_time);
  auto next = a2.Next();
  REQUIRE(next.ok());
  CHECK(*next > *last);
}

TEST_CASE("lease keeper: a retried claim of an id someone held meanwhile takes their bound") {
  World w;
  // P claims id 0 but cannot persist its bound, then loses the database.
  Process p(w, "host-p:8080", /*max_workers=*/1);
  p.store.renew_fails = true;
  p.keeper.Start();
  w.db.RunAll();
  REQUIRE(w.Row(0));
  CHECK(w.Row(0)->instance == p.keeper.instance());
  CHECK_FALSE(p.gen.status().serving);
  p.store.down = true;
  w.Tick(3100);  // P's claim expired in the store

  // Q (its clock 2 s ahead) takes id 0 over, issues, and releases it.
  auto q = std::make_unique<Process>(w, "host-q:8080", 1, /*skew_ms=*/2000);
  q->keeper.Start();
  w.db.RunAll();
  REQUIRE(q->keeper.status().worker_id == 0);
  auto q_last = q->Next();
  REQUIRE(q_last.ok());
  const int64_t q_time = q->gen.Decode(*q_last)->time_ms;
  q->gen.Shutdown();
  q->keeper.Stop();
  w.db.RunAll();  // Q stays alive: its renewal timer is still in the clock

  // P comes back and claims id 0 again: it must start above Q's bound, not
  // from the bound it read before Q held the id.
  p.store.down = false;
  p.store.renew_fails = false;
  w.Tick(150);
  REQUIRE(p.keeper.status().worker_id == 0);
  CHECK(p.gen.status().not_before_ms == q_time);
  auto early = p.Next();
  REQUIRE_FALSE(early.ok());
  CHECK(early.error().message.find("waiting for the clock to pass") != std::string::npos);
  w.Tick(q_time - p.wall.NowMs() + 1);
  auto first = p.Next();
  REQUIRE(first.ok());
  CHECK(*first > *q_last);
}
