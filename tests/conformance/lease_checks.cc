// The checks of lease_checks.h.
#include "tests/conformance/lease_checks.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/worker_lease_store.h"
#include "storage/worker_lease_store_factory.h"
#include "tests/conformance/conformance_support.h"

namespace seqd::lease_conformance {

// Ids 0, 1 in order; a repeated claim returns the same id, extended.
void CheckClaimBasics(Backend& b) {
  WorkerLeaseStore& s = b.store();
  CHECK(MustList(s).empty());

  const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a"));
  CHECK(a.worker_id == 0);
  CHECK(a.owner == "host-a:1");
  CHECK(a.instance == "inst-a");
  CHECK(a.time_bound_ms == 0);
  CHECK_FALSE(a.reclaimed);
  CHECK(a.expires_ms == a.store_now_ms + kLongTtlMs);
  CheckStoreNow(b, a.store_now_ms);

  const WorkerLease other = MustClaim(s, Req("host-b:1", "inst-b"));
  CHECK(other.worker_id == 1);
  CHECK(other.instance == "inst-b");
  CHECK(other.time_bound_ms == 0);

  b.Elapse(20);
  const WorkerLease again = MustClaim(s, Req("host-a:1", "inst-a"));
  CHECK(again.worker_id == 0);
  CHECK(again.reclaimed);
  CHECK(again.store_now_ms > a.store_now_ms);
  CHECK(again.expires_ms == again.store_now_ms + kLongTtlMs);
  CHECK(again.time_bound_ms == 0);

  // The same instance under another owner name: same id, owner updated.
  const WorkerLease renamed = MustClaim(s, Req("host-a:2", "inst-a"));
  CHECK(renamed.worker_id == 0);
  CHECK(renamed.owner == "host-a:2");

  const std::vector<WorkerLease> rows = MustList(s);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].worker_id == 0);
  CHECK(rows[0].owner == "host-a:2");
  CHECK(rows[0].instance == "inst-a");
  CHECK(rows[0].expires_ms == renamed.expires_ms);
  CHECK(rows[0].time_bound_ms == 0);
  CHECK(rows[0].store_now_ms >= renamed.store_now_ms);
  CheckStoreNow(b, rows[0].store_now_ms);
  CHECK(rows[1].worker_id == 1);
  CHECK(rows[1].owner == "host-b:1");
  CHECK(rows[1].instance == "inst-b");
  CHECK(rows[1].expires_ms == other.expires_ms);
  CHECK(rows[1].store_now_ms == rows[0].store_now_ms);
}

// Renew extends, raises the bound (never lowers it), refuses other instances.
void CheckRenew(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a"));
  REQUIRE(a.worker_id == 0);

  b.Elapse(10);
  auto r1 = s.Renew(0, "inst-a", kLongTtlMs, 1000);
  REQUIRE_OK(r1);
  CHECK(r1->worker_id == 0);
  CHECK(r1->owner == "host-a:1");
  CHECK(r1->instance == "inst-a");
  CHECK(r1->time_bound_ms == 1000);
  CHECK(r1->store_now_ms > a.store_now_ms);
  CHECK(r1->expires_ms == r1->store_now_ms + kLongTtlMs);
  CHECK(r1->expires_ms > a.expires_ms);
  CheckStoreNow(b, r1->store_now_ms);

  auto r2 = s.Renew(0, "inst-a", kLongTtlMs, 500);  // lower: ignored
  REQUIRE_OK(r2);
  CHECK(r2->time_bound_ms == 1000);
  auto r3 = s.Renew(0, "inst-a", 2 * kLongTtlMs, 2000);
  REQUIRE_OK(r3);
  CHECK(r3->time_bound_ms == 2000);
  CHECK(r3->expires_ms == r3->store_now_ms + 2 * kLongTtlMs);

  CheckError(s.Renew(0, "inst-x", kLongTtlMs, 3000), ErrorCode::kFailedPrecondition,
             "worker id 0 is no longer leased to this process");
  CheckError(s.Renew(7, "inst-a", kLongTtlMs, 3000), ErrorCode::kFailedPrecondition,
             "worker id 7 is no longer leased to this process");
  WorkerLease row = RowOf(s, 0);
  CHECK(row.instance == "inst-a");
  CHECK(row.time_bound_ms == 2000);  // the failed renews changed nothing
  CHECK(row.expires_ms == r3->expires_ms);
  CHECK(MustList(s).size() == 1);

  // A repeated claim reports the bound as stored.
  const WorkerLease again = MustClaim(s, Req("host-a:1", "inst-a"));
  CHECK(again.worker_id == 0);
  CHECK(again.time_bound_ms == 2000);
  CHECK(RowOf(s, 0).time_bound_ms == 2000);

  // After expiry, as long as nobody took the row over, renewing works.
  const WorkerLease other = MustClaim(s, Req("host-b:1", "inst-b", 16, b.short_ttl()));
  REQUIRE(other.worker_id == 1);
  b.Elapse(b.short_ttl());
  auto late = s.Renew(1, "inst-b", kLongTtlMs, 5);
  REQUIRE_OK(late);
  CHECK(late->expires_ms == late->store_now_ms + kLongTtlMs);
  CHECK(late->store_now_ms >= other.expires_ms);
  CHECK(late->time_bound_ms == 5);
}

// Release keeps owner and instance; the same owner gets the id back with the
// released bound; Release by another instance is a no-op.
void CheckReleaseAndSameOwner(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const int kMax = 4;
  CHECK(MustClaim(s, Req("host-x:1", "inst-x", kMax)).worker_id == 0);
  CHECK(MustClaim(s, Req("host-o:1", "inst-a1", kMax)).worker_id == 1);
  CHECK(MustClaim(s, Req("host-y:1", "inst-y", kMax)).worker_id == 2);
  REQUIRE_OK(s.Release(2, "inst-y", 123));

  REQUIRE_OK(s.Renew(1, "inst-a1", kLongTtlMs, 5000));
  REQUIRE_OK(s.Release(1, "inst-a1", 4000));  // may lower the bound
  WorkerLease row = RowOf(s, 1);
  CHECK(row.expires_ms == 0);
  CHECK(row.time_bound_ms == 4000);
  CHECK(row.owner == "host-o:1");
  CHECK(row.instance == "inst-a1");
  CHECK_ERR(s.Renew(0, "inst-a1", kLongTtlMs, 0), ErrorCode::kFailedPrecondition);

  // Another process of the same owner: its old id (not the free id 3, not
  // the released id 2 of another owner), with the released bound.
  const WorkerLease a2 = MustClaim(s, Req("host-o:1", "inst-a2", kMax));
  CHECK(a2.worker_id == 1);
  CHECK(a2.time_bound_ms == 4000);
  CHECK(a2.instance == "inst-a2");
  CHECK(a2.expires_ms == a2.store_now_ms + kLongTtlMs);
  row = RowOf(s, 1);
  CHECK(row.instance == "inst-a2");
  CHECK(row.owner == "host-o:1");
  CHECK(row.time_bound_ms == 4000);  // left as it was
  CHECK(row.expires_ms == a2.expires_ms);

  // The old instance can neither release nor renew it any more.
  REQUIRE_OK(s.Release(1, "inst-a1", 1));
  row = RowOf(s, 1);
  CHECK(row.instance == "inst-a2");
  CHECK(row.time_bound_ms == 4000);
  CHECK(row.expires_ms == a2.expires_ms);
  CheckError(s.Renew(1, "inst-a1", kLongTtlMs, 0), ErrorCode::kFailedPrecondition,
             "worker id 1 is no longer leased to this process");
  REQUIRE_OK(s.Release(99, "inst-a1", 1));  // no row at all: also a no-op
  CHECK(MustList(s).size() == 3);

  // A free id beats a released row of another owner; then that row.
  CHECK(MustClaim(s, Req("host-z:1", "inst-z", kMax)).worker_id == 3);
  const WorkerLease w = MustClaim(s, Req("host-w:1", "inst-w", kMax));
  CHECK(w.worker_id == 2);
  CHECK(w.time_bound_ms == 123);
  CHECK(RowOf(s, 2).owner == "host-w:1");
  CheckError(s.Claim(Req("host-v:1", "inst-v", kMax)), ErrorCode::kNotServing,
             "all 4 worker ids are leased");

  // Release and the same instance claims again: its own row.
  REQUIRE_OK(s.Release(3, "inst-z", 77));
  const WorkerLease z = MustClaim(s, Req("host-z:1", "inst-z", kMax));
  CHECK(z.worker_id == 3);
  CHECK(z.time_bound_ms == 77);
}

// An unexpired lease of another instance is never taken, same owner or not.
void CheckUnexpiredNotTaken(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const WorkerLease a = MustClaim(s, Req("host-o:1", "inst-a"));
  CHECK(a.worker_id == 0);
  const WorkerLease c = MustClaim(s, Req("host-o:1", "inst-c"));
  CHECK(c.worker_id == 1);
  WorkerLease row = RowOf(s, 0);
  CHECK(row.instance == "inst-a");
  CHECK(row.expires_ms == a.expires_ms);
  CheckError(s.Claim(Req("host-o:1", "inst-d", 2)), ErrorCode::kNotServing,
             "all 2 worker ids are leased");
  CHECK(RowOf(s, 1).instance == "inst-c");
  CHECK(MustList(s).size() == 2);
}

// An expired lease is taken over; the old holder's Renew then fails.
void CheckExpiryTakeover(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const int64_t ttl = b.short_ttl();
  const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a", 1, ttl));
  REQUIRE(a.worker_id == 0);
  auto renewed = s.Renew(0, "inst-a", ttl, 777);
  REQUIRE_OK(renewed);
  CheckError(s.Claim(Req("host-b:1", "inst-b", 1)), ErrorCode::kNotServing,
             "all 1 worker ids are leased");

  b.Elapse(ttl);
  const WorkerLease nb = MustClaim(s, Req("host-b:1", "inst-b", 1));
  CHECK(nb.worker_id == 0);
  CHECK(nb.time_bound_ms == 777);
  CHECK_FALSE(nb.reclaimed);  // another instance's row
  CHECK(nb.owner == "host-b:1");
  CHECK(nb.instance == "inst-b");
  CHECK(nb.store_now_ms >= renewed->expires_ms);

  CheckError(s.Renew(0, "inst-a", ttl, 900), ErrorCode::kFailedPrecondition,
             "worker id 0 is no longer leased to this process");
  REQUIRE_OK(s.Release(0, "inst-a", 1));  // no-op
  WorkerLease row = RowOf(s, 0);
  CHECK(row.instance == "inst-b");
  CHECK(row.owner == "host-b:1");
  CHECK(row.time_bound_ms == 777);
  CHECK(row.expires_ms == nb.expires_ms);
  // A's own claim now finds nothing free.
  CheckError(s.Claim(Req("host-a:1", "inst-a", 1)), ErrorCode::kNotServing,
             "all 1 worker ids are leased");
  auto rb = s.Renew(0, "inst-b", kLongTtlMs, 800);
  REQUIRE_OK(rb);
  CHECK(rb->time_bound_ms == 800);
}

// Takeover order among other owners' expired rows: released (expires 0)
// first, then the one that expired longest ago.
void CheckTakeoverOrder(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const int64_t u = b.short_ttl();
  const int kMax = 4;
  CHECK(MustClaim(s, Req("host-a:1", "inst-a", kMax, 3 * u)).worker_id == 0);
  CHECK(MustClaim(s, Req("host-b:1", "inst-b", kMax, u)).worker_id == 1);
  CHECK(MustClaim(s, Req("host-c:1", "inst-c", kMax, 2 * u)).worker_id == 2);
  CHECK(MustClaim(s, Req("host-h:1", "inst-h", kMax)).worker_id == 3);
  REQUIRE_OK(s.Release(3, "inst-h", 33));
  b.Elapse(3 * u);

  std::vector<int> got;
  std::vector<int64_t> bounds;
  for (const char* who : {"d", "e", "f", "g"}) {
    const WorkerLease l =
        MustClaim(s, Req(std::string("host-") + who + ":1", std::string("inst-") + who, kMax));
    got.push_back(l.worker_id);
    bounds.push_back(l.time_bound_ms);
  }
  CHECK(got == std::vector<int>{3, 1, 2, 0});
  CHECK(bounds == std::vector<int64_t>{33, 0, 0, 0});
  CheckError(s.Claim(Req("host-i:1", "inst-i", kMax)), ErrorCode::kNotServing,
             "all 4 worker ids are leased");
}

// Only ids below max_workers are handed out (or kept).
void CheckMaxWorkers(Backend& b) {
  WorkerLeaseStore& s = b.store();
  CHECK(MustClaim(s, Req("host-a:1", "inst-a", 2)).worker_id == 0);
  CHECK(MustClaim(s, Req("host-b:1", "inst-b", 2)).worker_id == 1);
  CheckError(s.Claim(Req("host-c:1", "inst-c", 2)), ErrorCode::kNotServing,
             "all 2 worker ids are leased");
  CHECK(MustClaim(s, Req("host-c:1", "inst-c", 3)).worker_id == 2);
  // inst-b's row 1 is outside 0..0: not its to keep under max_workers = 1.
  CheckError(s.Claim(Req("host-b:1", "inst-b", 1)), ErrorCode::kNotServing,
             "all 1 worker ids are leased");
  CHECK(RowOf(s, 1).instance == "inst-b");
  CHECK(MustClaim(s, Req("host-d:1", "inst-d", 1 << 20)).worker_id == 3);
  // Released: another process of the same owner gets it back.
  REQUIRE_OK(s.Release(3, "inst-d", 0));
  CHECK(MustClaim(s, Req("host-d:1", "inst-d2", 1 << 20)).worker_id == 3);
  CHECK(MustClaim(s, Req("host-e:1", "inst-e", 1 << 20)).worker_id == 4);
  CHECK(MustList(s).size() == 5);
}

// Bad arguments: kInvalidArgument with the same text everywhere; nothing
// is stored.
void CheckBadArguments(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const ErrorCode kBad = ErrorCode::kInvalidArgument;
  CheckError(s.Claim(Req(std::string(256, 'o'), "i")), kBad,
             "claim: owner must be at most 255 bytes, got 256");
  CheckError(s.Claim(Req("o", "")), kBad, "claim: instance must be 1..64 bytes, got 0");
  CheckError(s.Claim(Req("o", std::string(65, 'i'))), kBad,
             "claim: instance must be 1..64 bytes, got 65");
  CheckError(s.Claim(Req("o", "i", 0)), kBad, "claim: max_workers must be in 1..1048576, got 0");
  CheckError(s.Claim(Req("o", "i", -1)), kBad, "claim: max_workers must be in 1..1048576, got -1");
  CheckError(s.Claim(Req("o", "i", (1 << 20) + 1)), kBad,
             "claim: max_workers must be in 1..1048576, got 1048577");
  CheckError(s.Claim(Req("o", "i", 4, 0)), kBad, "claim: ttl_ms must be in 1..31536000000, got 0");
  CheckError(s.Claim(Req("o", "i", 4, -5)), kBad,
             "claim: ttl_ms must be in 1..31536000000, got -5");
  CheckError(s.Claim(Req("o", "i", 4, worker_lease::kMaxTtlMs + 1)), kBad,
             "claim: ttl_ms must be in 1..31536000000, got 31536000001");
  CHECK(MustList(s).empty());

  // The limits themselves are fine, and stored as given.
  const std::string owner(255, 'o');
  const std::string inst(64, 'i');
  const WorkerLease l = MustClaim(s, Req(owner, inst, 1, worker_lease::kMaxTtlMs));
  CHECK(l.worker_id == 0);
  CHECK(l.expires_ms == l.store_now_ms + worker_lease::kMaxTtlMs);
  const WorkerLease e = MustClaim(s, Req("", "x", 2));  // an empty owner is allowed
  CHECK(e.worker_id == 1);
  std::vector<WorkerLease> rows = MustList(s);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].owner == owner);
  CHECK(rows[0].instance == inst);
  CHECK(rows[1].owner.empty());

  CheckError(s.Renew(-1, inst, 10, 0), kBad, "renew: worker_id must be >= 0, got -1");
  CheckError(s.Renew(0, "", 10, 0), kBad, "renew: instance must be 1..64 bytes, got 0");
  CheckError(s.Renew(0, inst + "i", 10, 0), kBad, "renew: instance must be 1..64 bytes, got 65");
  CheckError(s.Renew(0, inst, 0, 0), kBad, "renew: ttl_ms must be in 1..31536000000, got 0");
  CheckError(s.Renew(0, inst, -1, 0), kBad, "renew: ttl_ms must be in 1..31536000000, got -1");
  CheckError(s.Release(-1, inst, 0), kBad, "release: worker_id must be >= 0, got -1");
  CheckError(s.Release(0, "", 0), kBad, "release: instance must be 1..64 bytes, got 0");
  rows = MustList(s);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].expires_ms == l.expires_ms);
  CHECK(rows[0].time_bound_ms == 0);
}

// Owner and instance compare byte for byte: case and trailing spaces count.
void CheckBytes(Backend& b) {
  WorkerLeaseStore& s = b.store();
  CHECK(MustClaim(s, Req("host:1", "x")).worker_id == 0);
  CHECK(MustClaim(s, Req("host:1", "x ")).worker_id == 1);
  CHECK(MustClaim(s, Req("host:1", "X")).worker_id == 2);
  CheckError(s.Renew(0, "x ", kLongTtlMs, 1), ErrorCode::kFailedPrecondition,
             "worker id 0 is no longer leased to this process");
  CheckError(s.Renew(1, "x", kLongTtlMs, 1), ErrorCode::kFailedPrecondition,
             "worker id 1 is no longer leased to this process");
  CheckError(s.Renew(2, "x", kLongTtlMs, 1), ErrorCode::kFailedPrecondition,
             "worker id 2 is no longer leased to this process");
  REQUIRE_OK(s.Release(0, "X", 5));  // not the holder: no-op
  CHECK(RowOf(s, 0).expires_ms > 0);
  CHECK(RowOf(s, 0).time_bound_ms == 0);
  REQUIRE_OK(s.Release(1, "x ", 6));
  CHECK(RowOf(s, 1).expires_ms == 0);

  // Owner "Host:1" is not "host:1": the free id, not the released row 1.
  const std::string utf8 = "h\xc3\xb6st:1";
  CHECK(MustClaim(s, Req("Host:1", "y")).worker_id == 3);
  CHECK(MustClaim(s, Req(utf8, "z")).worker_id == 4);
  CHECK(RowOf(s, 4).owner == utf8);
  // "host:1" itself gets its released row back.
  CHECK(MustClaim(s, Req("host:1", "w")).worker_id == 1);
}

// Claimers with their own store instances ("processes") race for ids: every
// round, kIds of them win distinct ids and the rest get kNotServing.
void CheckConcurrentClaims(Backend& b, int rounds) {
  constexpr int kIds = 8;
  constexpr int kClaimers = kIds + 1;
  std::vector<std::unique_ptr<WorkerLeaseStore>> stores;
  for (int t = 0; t < kClaimers; ++t) stores.push_back(b.NewInstance());

  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    std::vector<Result<WorkerLease>> results(
        kClaimers, Result<WorkerLease>(MakeError(ErrorCode::kInternal, "not run")));
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kClaimers; ++t) {
      threads.emplace_back([&, t] {
        // New owners every round: nobody prefers an id by owner, so all race
        // for the same free id (round 0) or released row (later rounds).
        const ClaimRequest r =
            Req(Num("host-r", round) + Num(":", t), Num("inst-r", round) + Num("-", t), kIds);
        ++ready;
        while (!go) std::this_thread::yield();
        results[t] = stores[t]->Claim(r);
      });
    }
    while (ready < kClaimers) std::this_thread::yield();
    go = true;
    for (auto& th : threads) th.join();

    std::map<int, int> holder;  // worker id -> thread
    int not_serving = 0;
    for (int t = 0; t < kClaimers; ++t) {
      if (results[t].ok()) {
        const int id = results[t]->worker_id;
        CHECK(id >= 0);
        CHECK(id < kIds);
        const auto emplaced = holder.emplace(id, t);  // not a binding: CHECK_MESSAGE captures
        CHECK_MESSAGE(emplaced.second, "id ", id, " given to threads ", emplaced.first->second,
                      " and ", t);
      } else if (results[t].error().code == ErrorCode::kNotServing) {
        ++not_serving;
      } else {
        FAIL_CHECK("thread ", t, ": ", Describe(results[t].error()));
      }
    }
    CHECK(holder.size() == static_cast<size_t>(kIds));
    CHECK(not_serving == kClaimers - kIds);

    const std::vector<WorkerLease> rows = MustList(b.store());
    REQUIRE(rows.size() == static_cast<size_t>(kIds));
    for (const WorkerLease& row : rows) {
      auto it = holder.find(row.worker_id);
      REQUIRE(it != holder.end());
      CHECK(row.instance == results[it->second]->instance);
      CHECK(row.expires_ms == results[it->second]->expires_ms);
    }
    for (const auto& [id, t] : holder) {
      REQUIRE_OK(stores[t]->Release(id, results[t]->instance, round));
    }
  }
}

// The store clock is unix millis at millisecond resolution and does not go
// back between calls.
void CheckRealClock(Backend& b) {
  WorkerLeaseStore& s = b.store();
  const WorkerLease a = MustClaim(s, Req("host-a:1", "inst-a"));
  std::vector<int64_t> nows{a.store_now_ms};
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
    auto r = s.Renew(0, "inst-a", kLongTtlMs, i);
    REQUIRE_OK(r);
    nows.push_back(r->store_now_ms);
    CheckStoreNow(b, r->store_now_ms);
  }
  std::set<int64_t> millis;
  for (size_t i = 0; i < nows.size(); ++i) {
    if (i > 0) CHECK(nows[i] >= nows[i - 1] + 5);
    millis.insert(nows[i] % 1000);
  }
  CHECK(millis.size() > 3);  // not whole seconds
}

}  // namespace seqd::lease_conformance
