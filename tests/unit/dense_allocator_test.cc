// Dense keys (server/core/dense_allocator.h) over a memory store, a manual
// database runner and a manual clock: blocks with no hole, group commit,
// idempotent tokens, bad input, auto-creation limits, store failures and
// shutdown; the router's choice between dense and segment keys; the rule
// syntax; and NEXT_BLOCK_ONCE's codec.
#include "server/core/dense_allocator.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proto/id_codec.h"
#include "server/base/manual_clock.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "server/route/key_router.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/allocator_fixture.h"
#include "tests/unit/take_boundary.h"

using namespace seqd;

namespace {

KeyRules DenseRules() {
  return KeyRules({AutoKeyRule{"d_", 10, KeyMode::kDense}, AutoKeyRule{"s_", 10}});
}

struct Fixture {
  MemoryStore memory;
  FaultyStore store{memory};
  ManualRunner db;
  ManualClock clock;
  std::unique_ptr<DenseAllocator> dense;

  explicit Fixture(DenseOptions options = {}) {
    dense = std::make_unique<DenseAllocator>(store, db, clock, DenseRules(), options);
  }
  Result<IdBatch> TakeNow(std::string_view key, int64_t count, std::string_view token = {},
                          std::string_view requester = {}) {
    TakeOutcome g;
    dense->Take(key, count, token, g.Callback(), requester);
    db.RunAll();
    REQUIRE(g.calls == 1);
    if (g.error) return *g.error;
    return *g.batch;
  }
  IdRange Block(std::string_view key, int64_t count, std::string_view token = {}) {
    Result<IdBatch> r = TakeNow(key, count, token);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    REQUIRE(r->ranges.size() == 1);
    return r->ranges.front();
  }
  int64_t StoreMax(const std::string& key) {
    Result<std::vector<int64_t>> max = memory.GetMaxIds({key});
    REQUIRE(max.ok());
    return max->front();
  }
};

}  // namespace

TEST_CASE("dense: blocks of any size follow each other with no hole, from 1") {
  Fixture f;
  int64_t next = 1;
  for (int64_t count : {1, 3, 7, 49, 3, 100'000, 1, 2}) {
    const IdRange r = f.Block("d_conv", count);
    CHECK(r.first == next);
    CHECK(r.size() == count);
    next = r.last + 1;
    // The row's max is exactly the last ID handed out: nothing buffered.
    CHECK(f.StoreMax("d_conv") == r.last);
  }
}

TEST_CASE("dense: a segment key skips the rest of its segment, a dense key does not") {
  // The difference OpenIM's unread count sees: after 49, a block of 3.
  DenseOptions options;
  Fixture f(options);
  ManualRunner seg_db;
  ManualClock seg_clock;
  SegmentAllocator segments(f.memory, seg_db, seg_clock, DenseRules(), AllocatorOptions());
  auto segment_block = [&](int64_t count) {
    TakeOutcome g;
    segments.Take("s_conv", count, g.Callback(), {}, /*contiguous=*/true);
    seg_db.RunAll();
    return g.range();
  };
  (void)segment_block(9);               // the segment is [1, 10]
  CHECK(segment_block(3).first == 11);  // 10 skipped
  (void)f.Block("d_conv", 9);
  CHECK(f.Block("d_conv", 3).first == 10);
}

TEST_CASE("dense: requests waiting together share one transaction, answered in order") {
  Fixture f;
  std::vector<TakeOutcome> got(50);
  for (size_t i = 0; i < got.size(); ++i) {
    f.dense->Take(i % 2 ? "d_a" : "d_b", static_cast<int64_t>(i + 1), {}, got[i].Callback());
  }
  f.db.RunAll();
  CHECK(f.dense->stats().transactions == 1);
  CHECK(f.store.reserve_batches() == 1);
  int64_t next_a = 1, next_b = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    const IdRange r = got[i].range();
    int64_t& next = i % 2 ? next_a : next_b;
    CHECK(r.first == next);
    CHECK(r.size() == static_cast<int64_t>(i + 1));
    next = r.last + 1;
  }
  CHECK(f.StoreMax("d_a") == next_a - 1);
  CHECK(f.StoreMax("d_b") == next_b - 1);
  CHECK(f.dense->stats().waiting_now == 0);
}

TEST_CASE("dense: requests arriving while a key's transaction runs go in its next one") {
  Fixture f;
  TakeOutcome first, second, third;
  f.dense->Take("d_k", 2, {}, first.Callback());
  // The flush is posted; requests after it wait for the next one.
  f.db.RunOne();
  REQUIRE(first.calls == 1);
  f.dense->Take("d_k", 3, {}, second.Callback());
  f.dense->Take("d_k", 1, {}, third.Callback());
  f.db.RunAll();
  CHECK(first.range() == IdRange{1, 2});
  CHECK(second.range() == IdRange{3, 5});
  CHECK(third.range() == IdRange{6, 6});
  CHECK(f.dense->stats().transactions == 2);
}

TEST_CASE("dense: a token retried gets the same block, so a lost answer leaves no hole") {
  Fixture f;
  // The first block of a new conversation starts at 1 even if its first
  // answer is lost and the request is sent again.
  const IdRange lost = f.Block("d_new", 5, "req-1");
  CHECK(lost == IdRange{1, 5});
  const IdRange again = f.Block("d_new", 5, "req-1");
  CHECK(again == lost);
  CHECK(f.dense->stats().replayed == 1);
  CHECK(f.StoreMax("d_new") == 5);
  CHECK(f.Block("d_new", 2) == IdRange{6, 7});
  CHECK(f.Block("d_new", 2, "req-2") == IdRange{8, 9});

  SUBCASE("the same token with another count is refused, nothing handed out") {
    Result<IdBatch> r = f.TakeNow("d_new", 6, "req-1");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK(f.StoreMax("d_new") == 9);
  }
  SUBCASE("tokens are per key") { CHECK(f.Block("d_other", 5, "req-1") == IdRange{1, 5}); }
  SUBCASE("a pruned token is a new request") {
    REQUIRE(f.memory.PruneBlockTokens(INT64_MAX).ok());
    CHECK(f.Block("d_new", 5, "req-1") == IdRange{10, 14});
  }
  SUBCASE("tokened and plain requests waiting together keep their order") {
    TakeOutcome a, b, c;
    f.dense->Take("d_new", 1, {}, a.Callback());
    f.dense->Take("d_new", 2, "req-3", b.Callback());
    f.dense->Take("d_new", 5, "req-1", c.Callback());  // a retry
    f.db.RunAll();
    CHECK(a.range() == IdRange{10, 10});
    CHECK(b.range() == IdRange{11, 12});
    CHECK(c.range() == IdRange{1, 5});
  }
}

TEST_CASE("dense: blocks count in seqd_ids_issued_total once; a replayed block does not") {
  Metrics metrics("9.9.9");
  DenseOptions options;
  options.metrics = &metrics;
  Fixture f(options);
  const std::string series = R"(seqd_ids_issued_total{key="auto:d_"} )";
  auto issued = [&] {
    const std::string text = metrics.Render();
    const size_t at = text.find(series);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + series.size()));
  };
  CHECK(issued() == 0);  // the rule's series exists from the start
  (void)f.Block("d_a", 5, "t-1");
  (void)f.Block("d_b", 3);
  CHECK(issued() == 8);
  (void)f.Block("d_a", 5, "t-1");  // a retry: the same IDs, not new ones
  CHECK(issued() == 8);
  CHECK(f.dense->stats().replayed == 1);
}

TEST_CASE("dense: a replay must ask for its first count") {
  Fixture f;
  (void)f.Block("d_k", 3, "t");
  Result<IdBatch> r = f.TakeNow("d_k", 1, "t");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("another count") != std::string::npos);
}

TEST_CASE("dense: bad requests are refused before they reach the store") {
  DenseOptions options;
  options.max_count = 1000;
  Fixture f(options);
  ManualRunner seg_db;
  ManualClock seg_clock;
  SegmentAllocator segments(f.memory, seg_db, seg_clock, DenseRules(), AllocatorOptions());
  // Where every take is checked, dense or not.
  TakeBoundary boundary(segments, f.dense.get());
  auto refused = [&](std::string_view key, int64_t count, std::string_view token) {
    TakeOutcome g;
    boundary.router.Take({.key = key, .count = count, .contiguous = true, .token = token},
                         g.Callback());
    f.db.RunAll();
    REQUIRE(g.calls == 1);
    REQUIRE(g.error);
    return *g.error;
  };
  CHECK(refused("d_k", 0, {}).code == ErrorCode::kInvalidArgument);
  CHECK(refused("d_k", -5, {}).code == ErrorCode::kInvalidArgument);
  CHECK(refused("d_k", 1001, {}).code == ErrorCode::kInvalidArgument);
  CHECK(refused("d_k", 1, "has space").code == ErrorCode::kInvalidArgument);
  CHECK(refused("d_k", 1, std::string(65, 't')).code == ErrorCode::kInvalidArgument);
  CHECK(refused("d_k", 1, std::string("ctl\x01", 4)).code == ErrorCode::kInvalidArgument);
  CHECK(refused("", 1, {}).code == ErrorCode::kInvalidArgument);
  CHECK(refused("seqd.server_msg_id", 1, {}).code == ErrorCode::kInvalidArgument);
  CHECK(f.store.reserve_batches() == 0);
  // The largest count and the longest token are fine.
  CHECK(f.Block("d_k", 1000, std::string(64, 't')) == IdRange{1, 1000});
}

TEST_CASE("dense: a key that no dense rule creates and that has no row is unknown") {
  Fixture f;
  Result<IdBatch> r = f.TakeNow("x_k", 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kUnknownKey);
  // A row made by an operator is served densely too.
  REQUIRE(f.memory.CreateKey("x_k", 100, "").ok());
  CHECK(f.Block("x_k", 2) == IdRange{1, 2});
  CHECK(f.Block("x_k", 2) == IdRange{3, 4});
}

TEST_CASE("dense: new keys over auto_create_rate are refused and get no row") {
  DenseOptions options;
  options.auto_create_rate = 1;
  options.auto_create_burst = 2;
  Fixture f(options);
  CHECK(f.TakeNow("d_1", 1, {}, "tok").ok());
  CHECK(f.TakeNow("d_2", 1, {}, "tok").ok());
  Result<IdBatch> r = f.TakeNow("d_3", 1, {}, "tok");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kResourceExhausted);
  CHECK(f.StoreMax("d_3") == 0);
  // Keys with rows never count; another requester has its own budget.
  CHECK(f.TakeNow("d_1", 1, {}, "tok").ok());
  CHECK(f.TakeNow("d_3", 1, {}, "other").ok());
  f.clock.Advance(std::chrono::seconds(1));
  CHECK(f.TakeNow("d_4", 1, {}, "tok").ok());
}

TEST_CASE("dense: a failed transaction hands nothing out; the next block follows the last") {
  Fixture f;
  CHECK(f.Block("d_k", 4) == IdRange{1, 4});
  f.store.SetDown(true);
  Result<IdBatch> r = f.TakeNow("d_k", 3, "retry-me");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kStoreUnavailable);
  CHECK(f.dense->stats().failures == 1);
  f.store.SetDown(false);
  CHECK(f.Block("d_k", 3, "retry-me") == IdRange{5, 7});
  CHECK(f.Block("d_k", 1) == IdRange{8, 8});
}

TEST_CASE("dense: requests beyond max_waiting are refused at once") {
  DenseOptions options;
  options.max_waiting = 3;
  Fixture f(options);
  std::vector<TakeOutcome> got(4);
  for (TakeOutcome& g : got) f.dense->Take("d_k", 1, {}, g.Callback());
  REQUIRE(got[3].calls == 1);
  CHECK(got[3].error->code == ErrorCode::kStoreUnavailable);
  f.db.RunAll();
  CHECK(got[0].range() == IdRange{1, 1});
  CHECK(got[2].range() == IdRange{3, 3});
}

TEST_CASE("dense: shutdown fails the waiting requests and refuses new ones") {
  Fixture f;
  TakeOutcome waiting;
  f.dense->Take("d_k", 1, {}, waiting.Callback());
  f.dense->Shutdown();
  REQUIRE(waiting.calls == 1);
  CHECK(waiting.error->code == ErrorCode::kShuttingDown);
  f.db.RunAll();
  CHECK(waiting.calls == 1);
  TakeOutcome late;
  f.dense->Take("d_k", 1, {}, late.Callback());
  REQUIRE(late.calls == 1);
  CHECK(late.error->code == ErrorCode::kShuttingDown);
  CHECK(f.StoreMax("d_k") == 0);
}

TEST_CASE("dense: the router sends dense keys to the dense allocator, tokens only there") {
  Fixture f;
  ManualRunner seg_db;
  ManualClock seg_clock;
  SegmentAllocator segments(f.memory, seg_db, seg_clock, DenseRules(), AllocatorOptions());
  MemoryMessageStore messages_store;
  MemoryStore id_store;
  MessageService messages(messages_store, id_store, MessageServiceOptions());
  KeyRouter router(segments, messages, f.dense.get());
  auto run = [&] {
    while (f.db.RunAll() + seg_db.RunAll() > 0) {
    }
  };
  TakeOutcome dense_ids, segment_ids, token_on_segment, plain_take;
  router.Take({.key = "d_k", .count = 3, .contiguous = true, .token = "tok"}, dense_ids.Callback());
  router.Take({.key = "s_k", .count = 3, .contiguous = true}, segment_ids.Callback());
  router.Take({.key = "s_k", .count = 3, .contiguous = true, .token = "tok"},
              token_on_segment.Callback());
  // NEXT_IDS of a dense key is one block too.
  router.Take({.key = "d_k", .count = 2}, plain_take.Callback());
  run();
  CHECK(dense_ids.range() == IdRange{1, 3});
  CHECK(plain_take.range() == IdRange{4, 5});
  CHECK(segment_ids.range() == IdRange{1, 3});
  REQUIRE(token_on_segment.error);
  CHECK(token_on_segment.error->code == ErrorCode::kInvalidArgument);
  CHECK(router.max_count() == DenseOptions().max_count);
  // Dense keys never enter the segment allocator's memory.
  CHECK_FALSE(segments.SnapshotKey("d_k"));
}

TEST_CASE("dense: auto-key rules say their mode") {
  Result<AutoKeyRule> dense = ParseAutoKeyRule("si_:50:dense");
  REQUIRE(dense.ok());
  CHECK(dense->prefix == "si_");
  CHECK(dense->step == 50);
  CHECK(dense->mode == KeyMode::kDense);
  Result<AutoKeyRule> segment = ParseAutoKeyRule("a:b:7");
  REQUIRE(segment.ok());
  CHECK(segment->prefix == "a:b");
  CHECK(segment->mode == KeyMode::kSegment);
  Result<AutoKeyRule> explicit_segment = ParseAutoKeyRule("x_:5:segment");
  REQUIRE(explicit_segment.ok());
  CHECK(explicit_segment->mode == KeyMode::kSegment);
  CHECK_FALSE(ParseAutoKeyRule("x_:dense").ok());
  CHECK_FALSE(ParseAutoKeyRule(":5:dense").ok());
}

TEST_CASE("NEXT_BLOCK_ONCE codec: round trip, trailer, and strict parsing") {
  const std::string plain = proto::NextBlockOnceRequestPayload("d_k", 7, "tok-1");
  std::optional<proto::NextBlockOnceRequest> req = proto::ParseNextBlockOnceRequest(plain);
  REQUIRE(req);
  CHECK(req->key == "d_k");
  CHECK(req->count == 7);
  CHECK(req->token == "tok-1");
  CHECK(req->on_behalf_of.empty());

  const std::string behalf = proto::NextBlockOnceRequestPayload("d_k", 7, "tok-1", "client-9");
  req = proto::ParseNextBlockOnceRequest(behalf);
  REQUIRE(req);
  CHECK(req->token == "tok-1");
  CHECK(req->on_behalf_of == "client-9");

  // Cut anywhere, or a byte too many, it does not parse.
  for (size_t n = 0; n < plain.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(proto::ParseNextBlockOnceRequest(plain.substr(0, n)));
  }
  CHECK_FALSE(proto::ParseNextBlockOnceRequest(plain + "x"));
  CHECK_FALSE(proto::ParseNextBlockOnceRequest(behalf.substr(0, behalf.size() - 1)));
  // An empty token does not parse.
  std::string empty_token = plain.substr(0, 2 + 3 + 4);
  empty_token.push_back('\0');
  CHECK_FALSE(proto::ParseNextBlockOnceRequest(empty_token));
  CHECK(proto::IsIdOpcode(static_cast<uint8_t>(proto::kOpNextBlockOnce)));
}
