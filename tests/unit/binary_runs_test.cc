// NEXT_IDS runs (server/binary/next_ids_runs.h): requests of one key handled in
// one read share one take, and each still gets exactly its own count, in
// request order, across segment boundaries, as one error when the take
// fails, and as separate takes past max_count or at a change of key.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/id_codec.h"
#include "tests/unit/dispatcher_fixture.h"
#include "tests/unit/string_connection.h"

using namespace seqd;

namespace {

// The header's StringConnection: it can hand over frames as one read.
struct Fixture : DispatcherFixture<StringConnection> {
  explicit Fixture(AllocatorOptions options = {}) : DispatcherFixture(options) {
    REQUIRE(store.CreateKey("j", 10, "").ok());
  }
};

struct Answer {
  uint32_t request_id = 0;
  proto::Status status = proto::Status::kOk;
  std::vector<proto::IdRangeWire> ranges;
};

std::vector<Answer> Parse(const std::vector<std::string>& frames) {
  std::vector<Answer> out;
  for (const std::string& frame : frames) {
    Answer a;
    a.request_id = proto::DecodeFrame(frame).frame.request_id;
    const proto::ResponseView view = AnswerView(frame);
    a.status = view.status;
    if (view.status == proto::Status::kOk) {
      auto ranges = proto::ParseNextIdsResult(view.result);
      REQUIRE(ranges);
      a.ranges = *ranges;
    }
    out.push_back(a);
  }
  return out;
}

const Answer& For(const std::vector<Answer>& answers, uint32_t id) {
  for (const Answer& a : answers) {
    if (a.request_id == id) return a;
  }
  FAIL("no answer to request " << id);
  return answers.front();
}

std::vector<std::pair<int64_t, int64_t>> Pairs(const Answer& a) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& r : a.ranges) out.emplace_back(r.first, r.last);
  return out;
}

using P = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace

TEST_CASE("NEXT_IDS runs: one key's requests in a read share one take, each its own count") {
  Fixture f;
  // The key is not loaded yet: a run parks once, where single requests would
  // park one by one.
  const auto answers = Parse(f.conn.CallBatch({NextIdsFrame(1, "k", 2), NextIdsFrame(2, "k", 3),
                                               NextIdsFrame(3, "k", 1), NextIdsFrame(4, "k", 4)},
                                              f.clock));
  REQUIRE(answers.size() == 4);
  CHECK(f.allocator.stats().parked_total == 1);
  CHECK(Pairs(For(answers, 1)) == P{{1, 2}});
  CHECK(Pairs(For(answers, 2)) == P{{3, 5}});
  CHECK(Pairs(For(answers, 3)) == P{{6, 6}});
  CHECK(Pairs(For(answers, 4)) == P{{7, 10}});
  CHECK(f.conn.runs().in_flight() == 0);
  // Counted per request, not per run.
  CHECK(f.services.metrics().Render().find(
            R"(seqd_requests_total{interface="binary",op="next_ids",status="ok"} 4)") !=
        std::string::npos);
}

TEST_CASE("NEXT_IDS runs: across a segment boundary, each request gets its next IDs") {
  Fixture f;
  REQUIRE(!f.conn.Call(NextIdsFrame(1, "k", 7), f.clock).empty());  // 1-7: 8, 9, 10 left
  const auto answers = Parse(f.conn.CallBatch(
      {NextIdsFrame(2, "k", 2), NextIdsFrame(3, "k", 3), NextIdsFrame(4, "k", 1)}, f.clock));
  REQUIRE(answers.size() == 3);
  CHECK(Pairs(For(answers, 2)) == P{{8, 9}});
  CHECK(Pairs(For(answers, 3)) == P{{10, 12}});  // 10 from the first segment, 11-12 the next
  CHECK(Pairs(For(answers, 4)) == P{{13, 13}});
}

TEST_CASE("NEXT_IDS runs: a take of several ranges is shared out range by range") {
  Fixture f;
  NextIdsRuns& runs = f.conn.runs();
  runs.Open("k", {1, 2});
  runs.Add({2, 3});
  runs.Add({3, 1});
  runs.Add({4, 1});
  const uint32_t run = runs.Close();
  IdBatch batch;  // as a take over three segments with gaps between them
  batch.ranges = {{8, 9}, {20, 22}, {30, 31}};
  f.conn.DeliverRun(run, batch);
  std::vector<std::string> frames;
  for (size_t at = 0; at < f.conn.out().size();) {
    const proto::DecodeResult r = proto::DecodeFrame(std::string_view(f.conn.out()).substr(at));
    REQUIRE(r.state == proto::DecodeState::kFrame);
    frames.push_back(f.conn.out().substr(at, r.consumed));
    at += r.consumed;
  }
  const auto answers = Parse(frames);
  REQUIRE(answers.size() == 4);
  CHECK(Pairs(For(answers, 1)) == P{{8, 9}});
  CHECK(Pairs(For(answers, 2)) == P{{20, 22}});
  CHECK(Pairs(For(answers, 3)) == P{{30, 30}});
  CHECK(Pairs(For(answers, 4)) == P{{31, 31}});
  CHECK(runs.in_flight() == 0);

  // A take short of the run's total (never expected): the requests it cannot
  // serve fail as INTERNAL rather than get fewer IDs than they asked for.
  runs.Open("k", {5, 2});
  runs.Add({6, 2});
  batch.ranges = {{40, 42}};
  const size_t before = f.conn.out().size();
  f.conn.DeliverRun(runs.Close(), batch);
  const std::string rest = f.conn.out().substr(before);
  const proto::DecodeResult first = proto::DecodeFrame(rest);
  REQUIRE(first.state == proto::DecodeState::kFrame);
  const auto tail = Parse({rest.substr(0, first.consumed), rest.substr(first.consumed)});
  CHECK(Pairs(For(tail, 5)) == P{{40, 41}});
  CHECK(For(tail, 6).status == proto::Status::kInternal);
}

TEST_CASE("NEXT_IDS runs: another key or op ends a run; every ID is handed out once") {
  Fixture f;
  const auto answers = Parse(
      f.conn.CallBatch({NextIdsFrame(1, "k", 1), NextIdsFrame(2, "j", 2), NextIdsFrame(3, "k", 1),
                        NextIdsFrame(4, "k", 0), NextIdsFrame(5, "k", 2),
                        NextIdsFrame(6, "nokey", 1), NextIdsFrame(7, "k", 1)},
                       f.clock));
  REQUIRE(answers.size() == 7);
  CHECK(For(answers, 4).status == proto::Status::kInvalidArgument);  // count 0: alone
  CHECK(For(answers, 6).status == proto::Status::kUnknownKey);
  CHECK(Pairs(For(answers, 2)) == P{{1, 2}});
  // k's requests in the order they came, none twice.
  std::vector<int64_t> k_ids;
  for (uint32_t id : {1u, 3u, 5u, 7u}) {
    const Answer& a = For(answers, id);
    REQUIRE(a.status == proto::Status::kOk);
    for (const auto& r : a.ranges) {
      for (int64_t v = r.first; v <= r.last; ++v) k_ids.push_back(v);
    }
  }
  CHECK(k_ids == std::vector<int64_t>{1, 2, 3, 4, 5});
  CHECK(f.conn.runs().in_flight() == 0);
}

TEST_CASE("NEXT_IDS runs: counts past max_count split the run; a failed take fails each request") {
  AllocatorOptions o;
  o.max_count = 5;
  Fixture f(o);
  auto answers = Parse(f.conn.CallBatch(
      {NextIdsFrame(1, "k", 3), NextIdsFrame(2, "k", 3), NextIdsFrame(3, "k", 2)}, f.clock));
  REQUIRE(answers.size() == 3);
  CHECK(Pairs(For(answers, 1)) == P{{1, 3}});
  CHECK(Pairs(For(answers, 2)) == P{{4, 6}});
  CHECK(Pairs(For(answers, 3)) == P{{7, 8}});

  answers =
      Parse(f.conn.CallBatch({NextIdsFrame(4, "gone", 1), NextIdsFrame(5, "gone", 2)}, f.clock));
  REQUIRE(answers.size() == 2);
  CHECK(For(answers, 4).status == proto::Status::kUnknownKey);
  CHECK(For(answers, 5).status == proto::Status::kUnknownKey);
  CHECK(f.services.metrics().Render().find(
            R"(seqd_requests_total{interface="binary",op="next_ids",status="unknown_key"} 2)") !=
        std::string::npos);
  CHECK(f.conn.runs().in_flight() == 0);
}
