// Metrics: the KeySnapshot rate and runway, the Prometheus registry and its
// label cardinality rules (docs/metrics.md).
// GCC 12 reports a false -Wmaybe-uninitialized inside std::variant's move of
// Result<IdBatch> (a boost small_vector) when inlined into these tests.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "server/metrics/metrics.h"

#include <doctest/doctest.h>

#include <optional>

#include "server/base/manual_clock.h"
#include "server/core/allocator_gauges.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

struct AllocFixture {
  MemoryStore store;
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<SegmentAllocator> alloc;

  Metrics metrics{"9.9.9"};

  explicit AllocFixture(std::vector<AutoKeyRule> rules = {}, AllocatorOptions options = {}) {
    options.metrics = &metrics;
    alloc =
        std::make_unique<SegmentAllocator>(store, db, clock, KeyRules(std::move(rules)), options);
    metrics.SetAllocatorStats([this] { return CollectAllocatorGauges(*alloc); });
  }
  void Take(std::string_view key, int64_t count) {
    bool ok = false;
    alloc->Take(key, count, [&](Result<IdBatch> r) { ok = static_cast<bool>(r); });
    db.RunAll();
    REQUIRE(ok);
  }
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("metrics: HTTP requests through ApiRouter move seqd_requests_total") {
  AllocFixture f;
  REQUIRE(f.store.CreateKey("order", 100, ""));
  KeyAdmin admin(f.store, f.db, *f.alloc);
  TestServices services(f.store, f.db, *f.alloc, {.keys = &admin, .metrics = &f.metrics});
  ApiRouter router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()});
  auto get = [&](std::string target) { return GetAfterRunning(router, f.db, std::move(target)); };
  for (int i = 0; i < 3; ++i) get("/seq/order");
  get("/seq/nope");
  get("/no/such/path");
  const std::string text = get("/metrics").body();
  CHECK(text.find(R"(seqd_requests_total{interface="http",op="seq",status="ok"} 3)") !=
        std::string::npos);
  CHECK(text.find(R"(seqd_requests_total{interface="http",op="seq",status="unknown_key"} 1)") !=
        std::string::npos);
  CHECK(text.find(R"(seqd_requests_total{interface="http",op="other",status="not_found"} 1)") !=
        std::string::npos);
  CHECK(text.find(R"(seqd_ids_issued_total{key="order"} 3)") != std::string::npos);
  CHECK(text.find(R"(seqd_segment_reservations_total{key="order",result="ok"})") !=
        std::string::npos);
  CHECK(text.find(R"(seqd_key_step{key="order"} 100)") != std::string::npos);
  CHECK(text.find(R"(seqd_build_info{version="9.9.9"} 1)") != std::string::npos);
  CHECK(text.find(R"(seqd_request_duration_seconds_count{interface="http"})") != std::string::npos);
}

TEST_CASE("metrics: IDs issued are counted exactly past 2^32; a segment serves under 2^32") {
  // A key counts the IDs not yet reported in 32 bits (KeyState::reported):
  // exact because between two reports only lock-free takes from one
  // segment issue IDs, and a segment serves at most 2^32 - 1 of them.
  AllocatorOptions options;
  options.max_count = SegmentCursor::kMaxTake;
  options.prefetch_fraction = 0;  // the next segment is reserved at once
  AllocFixture f({}, options);
  constexpr int64_t kRowStep = int64_t{1} << 33;  // a SQLite row set by SQL
  REQUIRE(f.store.CreateKey("huge", kRowStep, ""));
  f.Take("huge", 1);  // reservation 1 lands; reservation 2 too (RunAll)
  int64_t issued = 1, last = 1, first_past = 0;
  // 257 takes of 2^24: lock-free, without a report between them, except
  // the first (the window after a wait starts through the lock) and where
  // the segment's served part ends.
  for (int i = 0; i < 257; ++i) {
    std::optional<IdBatch> got;
    f.alloc->Take("huge", SegmentCursor::kMaxTake, [&](Result<IdBatch> r) {
      REQUIRE(r);
      got = *r;
    });
    f.db.RunAll();
    INFO("take ", i);
    REQUIRE(got);
    for (const IdRange& r : got->ranges) {
      CHECK(r.first > last);
      if (r.first > allocator_internal::KeyState::kMaxServedSegment && first_past == 0)
        first_past = r.first;
      last = r.last;
    }
    issued += got->count();
  }
  CHECK(issued == 257 * SegmentCursor::kMaxTake + 1);
  // The first segment served [1, 2^32 - 1]; the rest of it was skipped.
  CHECK(first_past == kRowStep + 1);
  const std::string text = f.metrics.Render();
  const std::string series = R"(seqd_ids_issued_total{key="huge"} )";
  const size_t at = text.find(series);
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(text.substr(at + series.size())) == static_cast<double>(issued));
}

TEST_CASE("metrics: 1000 auto-created conversation keys make one key=\"auto:si_\" series") {
  AllocFixture f({AutoKeyRule{"si_", 10}});
  for (int i = 0; i < 1000; ++i) f.Take("si_u" + std::to_string(i), 1);
  const std::string text = f.metrics.Render();
  CHECK(text.find(R"(seqd_ids_issued_total{key="auto:si_"} 1000)") != std::string::npos);
  CHECK(Count(text, "si_u") == 0);  // no series names a conversation
  CHECK(Count(text, R"(seqd_ids_issued_total{)") == 1);
  CHECK(Count(text, R"(seqd_key_next_ready{)") == 1);
  CHECK(Count(text, R"(seqd_key_step{)") == 0);  // registered keys only
}

// The series lines of a /metrics page (comments excluded).
size_t SeriesCount(const std::string& text) {
  size_t n = 0, at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at && text[at] != '#') ++n;
    at = end + 1;
  }
  return n;
}

TEST_CASE("metrics: 10,000 random unknown keys add no series") {
  AllocFixture f({AutoKeyRule{"si_", 10}});
  REQUIRE(f.store.CreateKey("order", 100, ""));
  KeyAdmin admin(f.store, f.db, *f.alloc);
  TestServices services(f.store, f.db, *f.alloc, {.keys = &admin, .metrics = &f.metrics});
  ApiRouter router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()});
  auto get = [&](std::string target) { return GetAfterRunning(router, f.db, std::move(target)); };
  using boost::beast::http::status;
  CHECK(get("/seq/order").result() == status::ok);
  CHECK(get("/seq/si_a").result() == status::ok);
  CHECK(get("/seq/warm_up_unknown").result() == status::not_found);
  get("/metrics");  // its own request counter exists from now on
  const std::string before = get("/metrics").body();
  uint64_t x = 88172645463325252ull;  // xorshift: reproducible random names
  for (int i = 0; i < 10'000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    CHECK(get("/seq/k" + std::to_string(x)).result() == status::not_found);
  }
  const std::string after = get("/metrics").body();
  CHECK(SeriesCount(after) == SeriesCount(before));
  CHECK(Count(after, R"(key="k)") == 0);
  CHECK(
      after.find(R"(seqd_requests_total{interface="http",op="seq",status="unknown_key"} 10001)") !=
      std::string::npos);
  MESSAGE("/metrics: " << before.size() << " bytes before, " << after.size() << " after");
}

TEST_CASE("metrics: a failed first reservation of an unconfirmed key is labelled (unconfirmed)") {
  MemoryStore memory;
  FaultyStore store{memory};
  ManualRunner db;
  ManualClock clock;
  Metrics metrics{"9.9.9"};
  AllocatorOptions options;
  options.metrics = &metrics;
  SegmentAllocator alloc(store, db, clock, KeyRules(), options);
  metrics.SetAllocatorStats([&] { return CollectAllocatorGauges(alloc); });
  store.SetDown(true);
  alloc.Take("maybe_a_key", 1, [](Result<IdBatch>) {});
  CHECK(Count(metrics.Render(), "maybe_a_key") == 0);  // in memory, loading: no gauges
  db.RunAll();
  const std::string text = metrics.Render();
  CHECK(Count(text, "maybe_a_key") == 0);
  CHECK(text.find(R"x(seqd_segment_reservations_total{key="(unconfirmed)",result="error"} 1)x") !=
        std::string::npos);
}

TEST_CASE("KeySnapshot: rate over about the last minute and runway from both buffers") {
  AllocFixture f;
  REQUIRE(f.store.CreateKey("order", 1000, ""));
  f.Take("order", 1);
  {
    auto snap = f.alloc->SnapshotKey("order");
    REQUIRE(snap);
    CHECK(snap->rate_per_s == 0);  // no time has passed yet
    CHECK_FALSE(snap->runway_s);
  }
  f.clock.Advance(10s);
  f.Take("order", 99);  // 100 IDs in 10 s
  auto snap = f.alloc->SnapshotKey("order");
  REQUIRE(snap);
  CHECK(snap->rate_per_s == doctest::Approx(10.0));
  REQUIRE(snap->runway_s);
  const int64_t left = (snap->current.ready ? snap->current.last - snap->current.next + 1 : 0) +
                       (snap->next.ready ? snap->next.last - snap->next.next + 1 : 0);
  CHECK(*snap->runway_s == doctest::Approx(left / 10.0));

  // Idle for minutes: the rate falls to 0 and the runway disappears.
  for (int i = 0; i < 20; ++i) {
    f.clock.Advance(15s);
    (void)f.alloc->SnapshotKey("order");  // scrapes every 15 s
  }
  snap = f.alloc->SnapshotKey("order");
  CHECK(snap->rate_per_s == 0);
  CHECK_FALSE(snap->runway_s);

  // A new burst is measured over the last minute, not since the start.
  for (int i = 0; i < 6; ++i) {
    f.Take("order", 50);
    f.clock.Advance(10s);
    (void)f.alloc->SnapshotKey("order");
  }
  snap = f.alloc->SnapshotKey("order");
  CHECK(snap->rate_per_s == doctest::Approx(5.0).epsilon(0.2));
}

TEST_CASE("metrics: an admin-only router serves /metrics, /, /healthz, /readyz and 404s the rest") {
  AllocFixture f;
  REQUIRE(f.store.CreateKey("order", 100, ""));
  KeyAdmin admin(f.store, f.db, *f.alloc);
  TestServices services(f.store, f.db, *f.alloc, {.keys = &admin, .metrics = &f.metrics});
  ApiRouter router(services,
                   RouterOptions{"9.9.9", std::chrono::steady_clock::now(), /*admin_only=*/true});
  auto get = [&](std::string target) { return GetAfterRunning(router, f.db, std::move(target)); };
  using boost::beast::http::status;
  const ApiRouter::Response metrics = get("/metrics");
  CHECK(metrics.result() == status::ok);
  CHECK(metrics.body().find("seqd_build_info") != std::string::npos);
  CHECK(get("/").result() == status::ok);
  CHECK(get("/healthz").result() == status::ok);
  CHECK(get("/readyz").result() != status::not_found);
  CHECK(get("/seq/order").result() == status::not_found);
  CHECK(get("/api/segment/get/order").result() == status::not_found);
  CHECK(get("/admin/keys").result() == status::not_found);
  CHECK(get("/admin/cache").result() == status::not_found);
  CHECK(get("/msg/send").result() == status::not_found);
  // Nothing was taken through it.
  CHECK(f.metrics.Render().find(R"(seqd_ids_issued_total{key="order"})") == std::string::npos);
}

TEST_CASE("metrics: dense series follow the allocator's totals and never go down") {
  Metrics metrics("9.9.9");
  CHECK(metrics.Render().find("seqd_dense_blocks_total 0") != std::string::npos);
  DenseGauges g{40, 4, 2, 1, 3};
  metrics.SetDenseStats([&] { return g; });
  std::string text = metrics.Render();
  CHECK(text.find("seqd_dense_blocks_total 40") != std::string::npos);
  CHECK(text.find("seqd_dense_transactions_total 4") != std::string::npos);
  CHECK(text.find("seqd_dense_replayed_total 2") != std::string::npos);
  CHECK(text.find("seqd_dense_failures_total 1") != std::string::npos);
  CHECK(text.find("seqd_dense_waiting_requests 3") != std::string::npos);
  g = DenseGauges{45, 5, 2, 1, 0};
  text = metrics.Render();
  CHECK(text.find("seqd_dense_blocks_total 45") != std::string::npos);
  CHECK(text.find("seqd_dense_transactions_total 5") != std::string::npos);
  CHECK(text.find("seqd_dense_waiting_requests 0") != std::string::npos);
}

TEST_CASE("metrics: snowflake gauges exist only once a generator is attached") {
  Metrics metrics("9.9.9");
  std::string off = metrics.Render();
  CHECK(off.find("seqd_snowflake_serving") == std::string::npos);
  CHECK(off.find("seqd_snowflake_ids_issued_total 0") != std::string::npos);
  metrics.SetSnowflakeStats([] { return SnowflakeGauges{7, true, 12.5, 2}; });
  metrics.SnowflakeLeaseRenewal(true);
  metrics.SnowflakeLeaseRenewal(false);
  std::string on = metrics.Render();
  CHECK(on.find("seqd_snowflake_worker_id 7") != std::string::npos);
  CHECK(on.find("seqd_snowflake_serving 1") != std::string::npos);
  CHECK(on.find("seqd_snowflake_lease_seconds_left 12.5") != std::string::npos);
  CHECK(on.find("seqd_snowflake_parked_requests 2") != std::string::npos);
  CHECK(on.find("seqd_snowflake_lease_renewals_total{result=\"ok\"} 1") != std::string::npos);
  CHECK(on.find("seqd_snowflake_lease_renewals_total{result=\"error\"} 1") != std::string::npos);
}
