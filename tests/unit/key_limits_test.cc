// The allocator's limits against a hostile client: the cap on keys
// held in memory (max_cached_keys, LRU), the rate of auto-created keys per
// token, the unknown-key cache evicting its oldest entries, and the
// /admin/cache pages. Fake store, manual database runner and clock.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/base/manual_clock.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/core/token_buckets.h"
#include "server/http/api_router.h"
#include "server/metrics/metrics.h"
#include "server/service/wire_errors.h"
#include "server/binary/binary_dispatcher.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/allocator_fixture.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/string_connection.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;

namespace {

struct Fixture : AllocatorFixture {
  using AllocatorFixture::AllocatorFixture;

  // Takes one ID of `key` and runs the database until it is answered.
  Result<IdBatch> Take(std::string_view key, std::string_view requester = {}) {
    std::optional<Result<IdBatch>> out;
    alloc->Take(
        key, 1, [&](Result<IdBatch> r) { out = std::move(r); }, requester);
    db.RunAll();
    REQUIRE(out);
    return std::move(*out);
  }
  // Time passes and the periodic sweep stamps it (nothing is idle that long).
  void Later() {
    clock.Advance(1s);
    alloc->EvictIdle();
  }
  bool InMemory(std::string_view key) const { return alloc->SnapshotKey(key).has_value(); }
};

}  // namespace

TEST_CASE("max_cached_keys: the least recently used idle key leaves first") {
  AllocatorOptions o;
  o.max_cached_keys = 3;
  Fixture f(o);
  for (const char* k : {"a", "b", "c", "d", "e", "f", "g"}) REQUIRE(f.memory.CreateKey(k, 10, ""));
  for (const char* k : {"a", "b", "c"}) {
    REQUIRE(f.Take(k));
    f.Later();
  }
  REQUIRE(f.Take("a"));  // a is used again: b is now the least recently used
  f.Later();
  REQUIRE(f.Take("d"));
  CHECK(f.alloc->stats().keys_in_memory == 3);
  CHECK_FALSE(f.InMemory("b"));
  CHECK(f.InMemory("a"));
  CHECK(f.InMemory("c"));
  CHECK(f.InMemory("d"));
  CHECK(f.alloc->stats().evicted_capacity == 1);
  f.Later();
  REQUIRE(f.Take("e"));  // then c
  CHECK_FALSE(f.InMemory("c"));
  CHECK(f.alloc->stats().keys_in_memory == 3);
  // IDs of an evicted key are never handed out again.
  REQUIRE(f.Take("b"));
  CHECK(f.Take("b")->ranges[0].first > 10);
}

TEST_CASE("max_cached_keys: keys with parked requests or a reservation in flight stay") {
  AllocatorOptions o;
  o.max_cached_keys = 2;
  Fixture f(o);
  for (const char* k : {"a", "b", "c", "d"}) REQUIRE(f.memory.CreateKey(k, 10, ""));
  REQUIRE(f.Take("a"));
  f.Later();
  // b, c and d park (their first reservations wait for the database).
  int answered = 0;
  for (const char* k : {"b", "c", "d"}) {
    f.alloc->Take(k, 1, [&](Result<IdBatch> r) { answered += r.ok(); });
  }
  CHECK_FALSE(f.InMemory("a"));                 // idle: it made room
  CHECK(f.alloc->stats().keys_in_memory == 3);  // over the cap while all are busy
  for (const char* k : {"b", "c", "d"}) CHECK(f.InMemory(k));
  f.db.RunAll();
  CHECK(answered == 3);
  f.Later();
  REQUIRE(f.Take("a"));  // the cap holds again once they are idle
  CHECK(f.alloc->stats().keys_in_memory == 2);
}

TEST_CASE("max_cached_keys beyond a few hundred keys: sampled eviction keeps the recent keys") {
  // Above kExactEvictionKeys the victim is the least recently used of a
  // random sample: with half the keys used recently, a sample of 32 misses
  // every old key with probability 2^-32, so only old keys may go.
  AllocatorOptions o;
  o.max_cached_keys = 1000;
  Fixture f(o, {{"sg_", 10}});
  for (int i = 0; i < 1000; ++i) REQUIRE(f.Take("sg_" + std::to_string(i)));
  f.Later();
  for (int i = 500; i < 1000; ++i) REQUIRE(f.Take("sg_" + std::to_string(i)));  // from memory
  f.Later();  // the sweep counts those takes: their keys are recent
  for (int i = 1000; i < 1200; ++i) REQUIRE(f.Take("sg_" + std::to_string(i)));
  CHECK(f.alloc->stats().keys_in_memory == 1000);
  CHECK(f.alloc->stats().evicted_capacity == 200);
  int recent_kept = 0, old_kept = 0;
  for (int i = 0; i < 500; ++i) old_kept += f.InMemory("sg_" + std::to_string(i));
  for (int i = 500; i < 1000; ++i) recent_kept += f.InMemory("sg_" + std::to_string(i));
  CHECK(recent_kept == 500);
  CHECK(old_kept == 300);
}

TEST_CASE("max_cached_keys 0: no cap") {
  AllocatorOptions o;
  o.max_cached_keys = 0;
  Fixture f(o, {{"sg_", 10}});
  for (int i = 0; i < 100; ++i) REQUIRE(f.Take("sg_" + std::to_string(i)));
  CHECK(f.alloc->stats().keys_in_memory == 100);
}

TEST_CASE("TokenBuckets: bursts, then the rate; one bucket per name") {
  ManualClock clock;
  TokenBuckets buckets(2, 3);  // 2 per second, bursts of 3
  for (int i = 0; i < 3; ++i) CHECK(buckets.TryTake("t1", clock.Now()));
  CHECK_FALSE(buckets.TryTake("t1", clock.Now()));
  CHECK(buckets.TryTake("t2", clock.Now()));  // another token has its own
  clock.Advance(500ms);
  CHECK(buckets.TryTake("t1", clock.Now()));
  CHECK_FALSE(buckets.TryTake("t1", clock.Now()));
  clock.Advance(1h);  // refills to the burst, not beyond
  for (int i = 0; i < 3; ++i) CHECK(buckets.TryTake("t1", clock.Now()));
  CHECK_FALSE(buckets.TryTake("t1", clock.Now()));

  TokenBuckets few(1, 1, /*max_buckets=*/2);
  for (int i = 0; i < 10; ++i) {
    clock.Advance(1s);                           // earlier buckets have refilled: they may go
    const std::string name = std::to_string(i);  // "n" + ...: a GCC 12 -Wrestrict false positive
    CHECK(few.TryTake(name, clock.Now()));
  }
}

TEST_CASE("auto_create_rate: new rows per token are limited; existing rows never count") {
  AllocatorOptions o;
  o.auto_create_rate = 1;
  o.auto_create_burst = 2;
  Fixture f(o, {{"sg_", 10}});
  REQUIRE(f.Take("sg_1", "alice"));
  REQUIRE(f.Take("sg_2", "alice"));
  Result<IdBatch> over = f.Take("sg_3", "alice");
  REQUIRE_FALSE(over);
  CHECK(over.error().code == ErrorCode::kResourceExhausted);
  CHECK(over.error().message.find("retry later") != std::string::npos);
  CHECK_FALSE(f.memory.GetKey("sg_3").ok());  // no row was created
  CHECK_FALSE(f.InMemory("sg_3"));            // nor is it held
  CHECK(f.alloc->stats().auto_create_refused == 1);
  REQUIRE(f.Take("sg_3", "bob"));    // another token has its own budget
  REQUIRE(f.Take("sg_1", "alice"));  // keys already held: no limit
  // Existing rows loaded again (after eviction or a restart) are free.
  f.clock.Advance(1h);
  CHECK(f.alloc->EvictIdle() == 3);
  f.clock.Advance(1h);  // refilled: use it up on new keys
  REQUIRE(f.Take("sg_4", "alice"));
  REQUIRE(f.Take("sg_5", "alice"));
  for (const char* k : {"sg_1", "sg_2", "sg_3"}) CHECK(f.Take(k, "alice"));
  CHECK_FALSE(f.Take("sg_6", "alice"));
  f.clock.Advance(1s);
  CHECK(f.Take("sg_6", "alice"));
}

TEST_CASE("auto_create_rate: every parked request for the refused key gets the error") {
  AllocatorOptions o;
  o.auto_create_rate = 1;
  o.auto_create_burst = 1;
  Fixture f(o, {{"sg_", 10}});
  REQUIRE(f.Take("sg_1", "-"));
  int refused = 0;
  for (int i = 0; i < 3; ++i) {
    f.alloc->Take(
        "sg_2", 1,
        [&](Result<IdBatch> r) {
          refused += !r && r.error().code == ErrorCode::kResourceExhausted;
        },
        "-");
  }
  f.db.RunAll();
  CHECK(refused == 3);
  CHECK(f.alloc->stats().parked_now == 0);
}

TEST_CASE("unknown-key cache: full, it forgets its oldest entries, not all of them") {
  AllocatorOptions o;
  o.max_unknown_keys = 64 * 4;  // 4 per shard
  Fixture f(o);
  // Far more unknown keys than fit: every shard gets more than 4.
  for (int i = 0; i < 64 * 4 * 8; ++i) {
    Result<IdBatch> r = f.Take("ghost" + std::to_string(i));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::kUnknownKey);
  }
  // Dropped wholesale when full, a shard would hold 1 to 4 entries.
  CHECK(f.alloc->stats().unknown_keys == 64 * 4);
  // The latest key is still answered from memory.
  const int64_t calls = f.store.reserve_calls();
  CHECK_FALSE(f.Take("ghost" + std::to_string(64 * 4 * 8 - 1)));
  CHECK(f.store.reserve_calls() == calls);
}

TEST_CASE("/admin/cache is paginated like /admin/keys (after, limit, next_after)") {
  Fixture f({}, {{"sg_", 10}});
  KeyAdmin admin(f.store, f.db, *f.alloc);
  TestServices services(f.store, f.db, *f.alloc, {.keys = &admin});
  ApiRouter router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()});
  auto get = [&](std::string target) { return GetAfterRunning(router, f.db, std::move(target)); };
  for (int i = 0; i < 250; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "sg_%03d", i);
    REQUIRE(get(std::string("/seq/") + name).result() == http::status::ok);
  }
  auto page = [&](std::string target) {
    ApiRouter::Response res = get(target);
    REQUIRE(res.result() == http::status::ok);
    return nlohmann::json::parse(res.body());
  };
  nlohmann::json first = page("/admin/cache");  // 100 by default
  REQUIRE(first["keys"].size() == 100);
  CHECK(first["keys"][0]["key"] == "sg_000");
  CHECK(first["next_after"] == "sg_099");
  std::vector<std::string> seen;
  std::string after;
  for (int pages = 0; pages < 10; ++pages) {
    nlohmann::json p = page("/admin/cache?limit=60" + (after.empty() ? "" : "&after=" + after));
    for (auto& k : p["keys"]) seen.push_back(k["key"]);
    if (p["next_after"].is_null()) break;
    after = p["next_after"];
  }
  REQUIRE(seen.size() == 250);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.back() == "sg_249");
  CHECK(page("/admin/cache?after=sg_248")["keys"].size() == 1);
  CHECK(page("/admin/cache?after=sg_248")["next_after"].is_null());
  CHECK(get("/admin/cache?limit=0").result() == http::status::bad_request);
  CHECK(get("/admin/cache?limit=1001").result() == http::status::bad_request);
  CHECK(get("/admin/cache?after=%zz").result() == http::status::bad_request);
}

TEST_CASE("auto_create_rate over HTTP: 429 resource_exhausted for the open principal") {
  AllocatorOptions o;
  o.auto_create_rate = 1;
  o.auto_create_burst = 1;
  Fixture f(o, {{"sg_", 10}});
  KeyAdmin admin(f.store, f.db, *f.alloc);
  TestServices services(f.store, f.db, *f.alloc, {.keys = &admin});
  ApiRouter router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()});
  auto get = [&](std::string target) { return GetAfterRunning(router, f.db, std::move(target)); };
  CHECK(get("/seq/sg_a").result() == http::status::ok);
  ApiRouter::Response over = get("/seq/sg_b");
  CHECK(over.result() == http::status::too_many_requests);
  CHECK(nlohmann::json::parse(over.body())["error"]["code"] == "resource_exhausted");
  CHECK(over[http::field::retry_after] == "1");
  ApiRouter::Response ok = get("/seq/sg_a");
  CHECK(ok.result() == http::status::ok);  // held keys are not limited
  CHECK(ok.find(http::field::retry_after) == ok.end());
}

TEST_CASE("auto_create_rate over binary: a peer's forwarded NEXT_IDS counts against its client") {
  MemoryStore store;
  ThreadPoolRunner db{1};
  ManualClock clock;
  AllocatorOptions o;
  o.auto_create_rate = 0.0001;  // no refill while the test's clock moves (Call may advance it)
  o.auto_create_burst = 1;
  SegmentAllocator alloc(store, db, clock, KeyRules({{"sg_", 10}}), o);
  TestServices services(store, db, alloc);
  BinaryDispatcher dispatcher(services, BinaryDispatchLimits{});
  StopRunnerOnExit stop_db(db);  // before the allocator and services go
  auto principal = [](std::string id, std::string scopes) {
    auto p = std::make_shared<Principal>();
    p->id = std::move(id);
    p->scopes = ParseScopes(scopes).value();
    return p;
  };
  // Call advances the clock it is given while it waits for an answer. The
  // answers here come from the real db thread, so it gets a clock of its
  // own: advancing the allocator's would let a request's deadline pass
  // while a loaded machine has not yet run that thread.
  ManualClock wait_clock;
  auto status = [&](StringConnection& conn, uint32_t id, std::string_view key,
                    std::string_view on_behalf_of) {
    std::string frame;
    proto::AppendNextIdsRequest(frame, id, key, 1, on_behalf_of);
    return AnswerView(conn.Call(frame, wait_clock)).status;
  };
  StringConnection peer(dispatcher);
  peer.access() = Access(principal("peer", "cluster"), "binary", "10.0.0.2:1");
  StringConnection client(dispatcher);
  client.access() = Access(principal("alice", "ids:*"), "binary", "10.0.0.3:1");

  // The peer creates a key for alice, then for bob: one bucket each.
  CHECK(status(peer, 1, "sg_a", "alice") == proto::Status::kOk);
  CHECK(status(peer, 2, "sg_b", "bob") == proto::Status::kOk);
  // Alice's own next new key, direct, finds her bucket empty: the forwarded
  // one was charged to her, not to the peer.
  CHECK(status(client, 3, "sg_c", "") == proto::Status::kResourceExhausted);
  CHECK(status(peer, 4, "sg_d", "alice") == proto::Status::kResourceExhausted);
  // Only a peer may speak for someone else.
  CHECK(status(client, 5, "sg_e", "carol") == proto::Status::kPermissionDenied);
  CHECK(alloc.stats().auto_create_refused == 2);
  alloc.Shutdown();
  db.Stop();
}

TEST_CASE(
    "wire errors: resource_exhausted is HTTP 429, binary RESOURCE_EXHAUSTED (15), RESP text") {
  const Error e = MakeError(ErrorCode::kResourceExhausted, "too many new keys; retry later");
  const WireErrorRow& row = WireErrorFor(e.code);
  CHECK(row.http_status == 429);
  CHECK(row.binary == proto::Status::kResourceExhausted);
  CHECK(static_cast<int>(row.binary) == 15);
  CHECK_FALSE(proto::IsProtocolError(row.binary));  // the connection stays open
  CHECK(row.metric_label == "resource_exhausted");
  CHECK(RespErrorText(e) == e.message);
  const auto& statuses = Metrics::Statuses();
  CHECK(std::find(statuses.begin(), statuses.end(), "resource_exhausted") != statuses.end());
}
