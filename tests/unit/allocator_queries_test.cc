// OpenIM's ID queries in the allocator, with a fake store, a manual database runner
// and a manual clock: contiguous blocks (Take with contiguous), the largest ID handed
// out per key (MaxIds) and min seqs (GetMinSeqs, SetMinSeqs); and the ID
// ops' codec (proto/id_codec.h).
#include <doctest/doctest.h>

#include "proto/id_codec.h"
#include "tests/unit/allocator_fixture.h"
#include "tests/unit/take_boundary.h"

using namespace seqd;

namespace {

struct Values {
  std::optional<std::vector<int64_t>> values;
  std::optional<Error> error;
  ValuesCallback Callback() {
    return [this](Result<std::vector<int64_t>> r) {
      if (r) {
        values = *r;
      } else {
        error = r.error();
      }
    };
  }
};

struct Fixture : AllocatorFixture {
  using AllocatorFixture::AllocatorFixture;
  IdRange Block(std::string_view key, int64_t count) {
    TakeOutcome g;
    alloc->Take(key, count, g.Callback(), {}, /*contiguous=*/true);
    db.RunAll();
    REQUIRE(g.batch);
    REQUIRE(g.batch->ranges.size() == 1);
    return g.batch->ranges[0];
  }
  IdBatch Take(std::string_view key, int64_t count) {
    TakeOutcome g;
    alloc->Take(key, count, g.Callback());
    db.RunAll();
    REQUIRE(g.batch);
    return *g.batch;
  }
  Values Max(std::vector<std::string> keys) {
    Values v;
    alloc->MaxIds(std::move(keys), v.Callback());
    db.RunAll();
    return v;
  }
};

}  // namespace

TEST_CASE("a block never spans segments: the short rest of one is skipped, never handed out") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  CHECK(f.Block("k", 95) == IdRange{1, 95});
  f.db.RunAll();  // the next segment [101, 200] is here
  // Take would give 96..100 and 101..105; a block comes from one segment.
  CHECK(f.Block("k", 10) == IdRange{101, 110});
  IdBatch later = f.Take("k", 1);
  CHECK(later.ranges[0].first == 111);  // 96..100 are never handed out
}

TEST_CASE("a block waits for the next segment when the current one is too short") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  CHECK(f.Block("k", 1) == IdRange{1, 1});
  // Another process takes [101, 200] before our prefetch: ours is [201, 300].
  REQUIRE(f.memory.Reserve("k", std::nullopt));
  TakeOutcome g;
  f.alloc->Take("k", 150, g.Callback(), {},
                /*contiguous=*/true);  // more than the step: a segment of its own
  CHECK_FALSE(g.batch);
  f.db.RunAll();
  REQUIRE(g.batch);
  REQUIRE(g.batch->ranges.size() == 1);
  CHECK(g.batch->ranges[0].size() == 150);
  CHECK(g.batch->ranges[0].first > 200);
  // The rest of the first segment (2..100) was skipped with it.
  CHECK(f.Take("k", 1).ranges[0].first == g.batch->ranges[0].last + 1);
}

TEST_CASE("a block larger than the step is served from one segment on a cold key") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  const IdRange r = f.Block("k", 500);
  CHECK(r.size() == 500);
  CHECK(f.Block("k", 500).first > r.last);
}

TEST_CASE("blocks are refused as takes are: count, key") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  TakeBoundary boundary(*f.alloc);  // where every take is checked
  for (auto [key, count] : std::vector<std::pair<std::string, int64_t>>{
           {"k", 0}, {"k", 10'001}, {"bad\tkey", 1}, {"seqd.k", 1}}) {
    TakeOutcome g;
    boundary.router.Take({.key = key, .count = count, .contiguous = true}, g.Callback());
    f.db.RunAll();
    REQUIRE(g.error);
    CHECK(g.error->code == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("max: the last ID handed out in memory, the table's otherwise, 0 without a row") {
  Fixture f;
  REQUIRE(f.memory.CreateKey("k", 100, ""));
  REQUIRE(f.memory.CreateKey("fresh", 100, ""));
  Values v = f.Max({"k", "nothing", "fresh"});
  REQUIRE(v.values);
  CHECK(*v.values == std::vector<int64_t>{0, 0, 0});
  CHECK_FALSE(f.memory.GetKey("nothing"));  // no row created
  f.Take("k", 7);
  CHECK(*f.Max({"k"}).values == std::vector<int64_t>{7});
  f.Take("k", 90);  // past the prefetch point: [101, 200] reserved too
  CHECK(*f.Max({"k"}).values == std::vector<int64_t>{97});
  // Another allocator (a restart) answers from the table: all reserved.
  SegmentAllocator other(f.store, f.db, f.clock, KeyRules(), {});
  Values o;
  other.MaxIds({"k"}, o.Callback());
  f.db.RunAll();
  REQUIRE(o.values);
  CHECK(*o.values == std::vector<int64_t>{200});
  TakeOutcome next;
  other.Take("k", 1, next.Callback());
  f.db.RunAll();
  CHECK(next.batch->ranges[0].first == 201);
  Values after;
  other.MaxIds({"k"}, after.Callback());
  CHECK(*after.values == std::vector<int64_t>{201});  // from memory now
}

TEST_CASE("max and min seq lists: bad keys, 1000 keys at most") {
  Fixture f;
  Values bad = f.Max({"ok", "seqd.x"});
  REQUIRE(bad.error);
  CHECK(bad.error->code == ErrorCode::kInvalidArgument);
  Values big = f.Max(std::vector<std::string>(1001, "k"));
  REQUIRE(big.error);
  CHECK(big.error->code == ErrorCode::kTooLarge);
  CHECK(f.Max(std::vector<std::string>(1000, "k")).values->size() == 1000);
}

TEST_CASE("min seqs: 0 until set, set in one call, refused whole on a bad value") {
  Fixture f;
  auto get = [&](std::vector<std::string> keys) {
    Values v;
    f.alloc->GetMinSeqs(std::move(keys), v.Callback());
    f.db.RunAll();
    REQUIRE(v.values);
    return *v.values;
  };
  auto set = [&](std::vector<MinSeqValue> values) {
    std::optional<Status> s;
    f.alloc->SetMinSeqs(std::move(values), [&](Status st) { s = st; });
    f.db.RunAll();
    REQUIRE(s);
    return *s;
  };
  CHECK(get({"a", "b"}) == std::vector<int64_t>{0, 0});
  CHECK(set({{"a", 5}, {"b", 0}}));
  CHECK(get({"b", "a"}) == std::vector<int64_t>{0, 5});
  for (const auto& bad : std::vector<std::vector<MinSeqValue>>{
           {{"a", 9}, {"b", -1}}, {{"a", 9}, {"a", 10}}, {{"a", 9}, {"seqd.b", 1}}}) {
    Status s = set(bad);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == ErrorCode::kInvalidArgument);
  }
  CHECK(get({"a"}) == std::vector<int64_t>{5});  // nothing of a refused call written
  f.store.SetDown(true);
  Status down = set({{"a", 1}});
  REQUIRE_FALSE(down);
  CHECK(down.error().code == ErrorCode::kStoreUnavailable);
}

TEST_CASE("id codec: lists round-trip; anything but the exact encoding is refused") {
  const std::string keys = proto::KeyListPayload({"a", "bc"});
  auto parsed = proto::ParseKeyList(keys);
  REQUIRE(parsed);
  CHECK(*parsed == std::vector<std::string_view>{"a", "bc"});
  for (size_t cut = 0; cut < keys.size(); ++cut) {
    CHECK_FALSE(proto::ParseKeyList(std::string_view(keys).substr(0, cut)));
  }
  CHECK_FALSE(proto::ParseKeyList(keys + "x"));
  CHECK_FALSE(
      proto::ParseKeyList(std::string("\xff\xff\xff\xff", 4)));  // a count the bytes cannot hold
  const std::string kv = proto::KeyValueListPayload({{"a", -3}, {"b", 7}});
  auto items = proto::ParseKeyValueList(kv);
  REQUIRE(items);
  CHECK((*items)[0] == proto::KeyValueView{"a", -3});
  CHECK((*items)[1] == proto::KeyValueView{"b", 7});
  for (size_t cut = 0; cut < kv.size(); ++cut) {
    CHECK_FALSE(proto::ParseKeyValueList(std::string_view(kv).substr(0, cut)));
  }
  std::string frame;
  proto::AppendOkInt64List(frame, proto::kOpMaxIds, 9, {1, -2});
  proto::DecodeResult d = proto::DecodeFrame(frame);
  REQUIRE(d.state == proto::DecodeState::kFrame);
  auto resp = proto::ParseResponse(d.frame.payload);
  REQUIRE(resp);
  CHECK(*proto::ParseInt64List(resp->result) == std::vector<int64_t>{1, -2});
  CHECK_FALSE(proto::ParseInt64List(resp->result.substr(1)));
  CHECK_FALSE(proto::ParseNextBlockResult("short"));
  std::string times_frame;
  proto::AppendOkMaxIdsTimes(times_frame, 10, {5, 0}, {1796544000123, -1});
  proto::DecodeResult t = proto::DecodeFrame(times_frame);
  REQUIRE(t.state == proto::DecodeState::kFrame);
  CHECK(t.frame.opcode == static_cast<uint8_t>(proto::kOpMaxIdsTimes));
  auto times = proto::ParseResponse(t.frame.payload);
  REQUIRE(times);
  auto pairs = proto::ParseMaxIdsTimesResult(times->result);
  REQUIRE(pairs);
  REQUIRE(pairs->size() == 2);
  CHECK(((*pairs)[0].max_id == 5 && (*pairs)[0].time_ms == 1796544000123));
  CHECK(((*pairs)[1].max_id == 0 && (*pairs)[1].time_ms == -1));
  CHECK_FALSE(proto::ParseMaxIdsTimesResult(times->result.substr(0, times->result.size() - 8)));
  CHECK(proto::IsIdOpcode(0x0A));
  CHECK(proto::IsIdOpcode(0x0C));
  CHECK_FALSE(proto::IsIdOpcode(0x0D));
}

TEST_CASE("allocation times: -1 without a row, read from the store; bad lists refused") {
  Fixture f;
  auto times = [&](std::vector<std::string> keys) {
    Values v;
    f.alloc->GetAllocTimes(std::move(keys), v.Callback());
    f.db.RunAll();
    return v;
  };
  REQUIRE(f.memory.CreateKey("k", 10, ""));
  Values none = times({"k", "nope"});
  REQUIRE(none.values);
  CHECK(*none.values == std::vector<int64_t>{0, -1});  // a row never stamped; no row
  ReserveRequest stamped{"k", 1, {}, 0, ""};
  stamped.stamp_time = true;
  REQUIRE(f.memory.ReserveMany({stamped})[0]);
  Values later = times({"k"});
  REQUIRE(later.values);
  CHECK((*later.values)[0] > 0);
  Values bad = times({"ok", "seqd.x"});
  REQUIRE(bad.error);
  CHECK(bad.error->code == ErrorCode::kInvalidArgument);
  Values big = times(std::vector<std::string>(1001, "k"));
  REQUIRE(big.error);
  CHECK(big.error->code == ErrorCode::kTooLarge);
  f.store.SetDown(true);
  Values down = times({"k"});
  REQUIRE(down.error);
  CHECK(down.error->code == ErrorCode::kStoreUnavailable);
}

TEST_CASE("user seqs codec: round trip; a bad field, raise byte or list is refused") {
  const std::string get = proto::UserSeqsPayload("u1", 3, {"si_a", "sg_b"});
  auto req = proto::ParseUserSeqsRequest(get);
  REQUIRE(req);
  CHECK(req->user == "u1");
  CHECK(req->field == 3);
  CHECK(req->convs == std::vector<std::string_view>{"si_a", "sg_b"});
  for (size_t cut = 0; cut < get.size(); ++cut) {
    CHECK_FALSE(proto::ParseUserSeqsRequest(std::string_view(get).substr(0, cut)));
  }
  CHECK_FALSE(proto::ParseUserSeqsRequest(proto::UserSeqsPayload("u1", 0, {"a"})));
  CHECK_FALSE(proto::ParseUserSeqsRequest(proto::UserSeqsPayload("u1", 4, {"a"})));
  const std::string set = proto::SetUserSeqsPayload("u2", 1, true, {{"si_a", 7}, {"sg_b", 0}});
  auto sreq = proto::ParseSetUserSeqsRequest(set);
  REQUIRE(sreq);
  CHECK(sreq->user == "u2");
  CHECK(sreq->field == 1);
  CHECK(sreq->raise_only);
  REQUIRE(sreq->values.size() == 2);
  CHECK(sreq->values[0] == std::pair<std::string_view, int64_t>{"si_a", 7});
  for (size_t cut = 0; cut < set.size(); ++cut) {
    CHECK_FALSE(proto::ParseSetUserSeqsRequest(std::string_view(set).substr(0, cut)));
  }
  std::string bad_raise = set;
  bad_raise[2 + 2 + 1] = 2;  // u16 length, "u2", field, then raise_only
  CHECK_FALSE(proto::ParseSetUserSeqsRequest(bad_raise));
  CHECK_FALSE(proto::ParseSetUserSeqsRequest(set + "x"));
}

TEST_CASE("user seqs: 0 until set, raise or overwrite, bad users and lists refused") {
  Fixture f;
  auto get = [&](std::string user, UserSeqField field, std::vector<std::string> convs) {
    Values v;
    f.alloc->GetUserSeqs(std::move(user), field, std::move(convs), v.Callback());
    f.db.RunAll();
    return v;
  };
  auto set = [&](std::string user, UserSeqField field, bool raise,
                 std::vector<UserSeqValue> values) {
    std::optional<Status> s;
    f.alloc->SetUserSeqs(std::move(user), field, raise, std::move(values),
                         [&](Status st) { s = st; });
    f.db.RunAll();
    REQUIRE(s);
    return *s;
  };
  CHECK(*get("u", UserSeqField::kRead, {"a", "b"}).values == std::vector<int64_t>{0, 0});
  CHECK(set("u", UserSeqField::kRead, true, {{"a", 5}}));
  CHECK(set("u", UserSeqField::kRead, true, {{"a", 3}}));
  CHECK(*get("u", UserSeqField::kRead, {"a"}).values == std::vector<int64_t>{5});
  CHECK(set("u", UserSeqField::kRead, false, {{"a", 3}}));
  CHECK(*get("u", UserSeqField::kRead, {"a"}).values == std::vector<int64_t>{3});
  for (const std::string& user : {std::string(), std::string(256, 'u'), std::string("a\nb")}) {
    Values v = get(user, UserSeqField::kRead, {"a"});
    REQUIRE(v.error);
    CHECK(v.error->code == ErrorCode::kInvalidArgument);
    Status s = set(user, UserSeqField::kRead, false, {{"a", 1}});
    REQUIRE_FALSE(s);
    CHECK(s.error().code == ErrorCode::kInvalidArgument);
  }
  CHECK(get(std::string(255, 'u'), UserSeqField::kMax, {"a"}).values);
  for (const auto& bad :
       std::vector<std::vector<UserSeqValue>>{{{"a", -1}}, {{"a", 1}, {"a", 2}}, {{"seqd.x", 1}}}) {
    Status s = set("u", UserSeqField::kMin, false, bad);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == ErrorCode::kInvalidArgument);
  }
  Values big = get("u", UserSeqField::kMin, std::vector<std::string>(1001, "a"));
  REQUIRE(big.error);
  CHECK(big.error->code == ErrorCode::kTooLarge);
  f.store.SetDown(true);
  Status down = set("u", UserSeqField::kMin, false, {{"a", 1}});
  REQUIRE_FALSE(down);
  CHECK(down.error().code == ErrorCode::kStoreUnavailable);
}
