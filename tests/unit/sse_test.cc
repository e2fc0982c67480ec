// Server-Sent Events without sockets: the seam between replay and push
// (ConvResume) under every interleaving a seeded simulation reaches, the
// event bytes and resume tokens, the sink's bound, the streams' limits.
#include <doctest/doctest.h>

#include <deque>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "server/http/stream/event_sink.h"
#include "server/http/http_util.h"
#include "server/http/stream/sse_resume.h"
#include "server/http/stream/sse_wire.h"
#include "server/http/stream/stream_limits.h"

using namespace seqd;

namespace {

StoredMessage Msg(int64_t seq) {
  StoredMessage m;
  m.conv_id = "c";
  m.seq = seq;
  m.payload = "p" + std::to_string(seq);
  return m;
}

std::vector<int64_t> Seqs(const std::vector<StoredMessage>& ms) {
  std::vector<int64_t> out;
  for (const StoredMessage& m : ms) out.push_back(m.seq);
  return out;
}

std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t s = from; s <= to; ++s) out.push_back(s);
  return out;
}

// One conversation's store, bus and a stream's ConvResume, stepped in a
// random order: commits (pushed after they commit, in order, some pushes
// lost when `lossy`), pulls answered at a random later step (they read the
// store when answered: any time between asking and answering), and the
// start coming at a random step after the subscription.
struct Simulation {
  std::mt19937 rng;
  bool lossy;
  bool from_store;
  int64_t hidden_below = 0;  // seqs below it are neither pulled nor pushed (trimmed)
  size_t page = 3;
  size_t max_kept = 4;
  std::vector<int64_t> committed;  // seqs 1..n
  std::deque<int64_t> pushes;      // committed, not yet pushed
  ConvResume resume;
  std::optional<int64_t> pull_from;  // a pull asked, not answered
  std::vector<StoredMessage> delivered;

  Simulation(uint32_t seed, bool lossy_, bool from_store_, size_t max_kept_)
      : rng(seed),
        lossy(lossy_),
        from_store(from_store_),
        max_kept(max_kept_),
        resume(from_store_, max_kept_) {}

  bool Chance(int percent) { return std::uniform_int_distribution<int>(0, 99)(rng) < percent; }

  void Commit() {
    const int64_t seq = static_cast<int64_t>(committed.size()) + 1;
    committed.push_back(seq);
    pushes.push_back(seq);
  }
  void Push(bool may_lose) {
    const int64_t seq = pushes.front();
    pushes.pop_front();
    if (may_lose && lossy && Chance(30)) return;
    if (seq < hidden_below) return;  // trimmed before its push reached us
    resume.OnLive(Msg(seq), delivered);
  }
  void AskPull() {
    if (!pull_from && resume.WantsPull()) pull_from = resume.PullStarted();
  }
  void AnswerPull() {
    std::vector<StoredMessage> page_messages;
    bool more = false;
    for (int64_t seq : committed) {
      if (seq < *pull_from || seq < hidden_below) continue;
      if (page_messages.size() == page) {
        more = true;
        break;
      }
      page_messages.push_back(Msg(seq));
    }
    pull_from.reset();
    resume.OnPulled(page_messages, more, delivered);
  }

  // Runs `steps` random steps (the start among them), then lets every
  // push and pull finish. Returns the start point.
  int64_t Run(int steps, std::optional<int64_t> start_at) {
    std::optional<int64_t> start;
    for (int i = 0; i < steps; ++i) {
      if (!start && Chance(15)) {
        start = start_at ? *start_at : static_cast<int64_t>(committed.size());
        resume.Start(*start);
      }
      switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
        case 0:
          Commit();
          break;
        case 1:
          if (!pushes.empty()) Push(/*may_lose=*/true);
          break;
        case 2:
          if (pull_from) AnswerPull();
          break;
        default:
          AskPull();
          break;
      }
    }
    if (!start) {
      start = start_at ? *start_at : static_cast<int64_t>(committed.size());
      resume.Start(*start);
    }
    // One more message, its push never lost: every subscriber hears of the
    // end eventually.
    Commit();
    while (!pushes.empty()) Push(/*may_lose=*/pushes.size() > 1);
    for (int guard = 0; guard < 10000 && !resume.live(); ++guard) {
      AskPull();
      if (pull_from) AnswerPull();
    }
    REQUIRE(resume.live());
    return *start;
  }
};

// Brings `r` live on a conversation with no messages yet: started after
// seq 0, its first pull returned nothing (delivered to `out`).
void GoLiveOnEmptyConversation(ConvResume& r, std::vector<StoredMessage>& out) {
  r.Start(0);
  r.PullStarted();
  r.OnPulled({}, false, out);
  REQUIRE(r.live());
}

}  // namespace

TEST_CASE("ConvResume: replay, then the kept pushes, then live: no gap, no repeat") {
  ConvResume r(false, 100);
  std::vector<StoredMessage> out;
  r.OnLive(Msg(6), out);  // pushed before the start is known: kept
  r.Start(2);
  CHECK(r.WantsPull());
  CHECK(r.PullStarted() == 3);
  r.OnLive(Msg(7), out);  // pushed while the pull is under way: kept
  CHECK(out.empty());
  r.OnPulled({Msg(3), Msg(4), Msg(5), Msg(6)}, false, out);
  CHECK(Seqs(out) == std::vector<int64_t>{3, 4, 5, 6, 7});
  CHECK(r.live());
  out.clear();
  r.OnLive(Msg(7), out);  // a repeat
  r.OnLive(Msg(8), out);  // next: at once, no pull
  CHECK(Seqs(out) == std::vector<int64_t>{8});
  CHECK(!r.WantsPull());
}

TEST_CASE("ConvResume: a gap in the pushes is pulled before what follows it") {
  ConvResume r(false, 100);
  std::vector<StoredMessage> out;
  GoLiveOnEmptyConversation(r, out);
  r.OnLive(Msg(1), out);
  r.OnLive(Msg(3), out);  // 2 was lost
  CHECK(Seqs(out) == std::vector<int64_t>{1});
  REQUIRE(r.WantsPull());
  CHECK(r.PullStarted() == 2);
  r.OnLive(Msg(4), out);
  r.OnPulled({Msg(2), Msg(3)}, false, out);
  CHECK(Seqs(out) == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(r.live());
}

TEST_CASE("ConvResume: seqs a complete pull does not return are skipped, not waited for") {
  ConvResume r(false, 100);
  std::vector<StoredMessage> out;
  r.OnLive(Msg(10), out);
  r.Start(0);
  r.PullStarted();
  r.OnPulled({Msg(8), Msg(9), Msg(10)}, false, out);  // 1..7 below the min seq
  CHECK(Seqs(out) == std::vector<int64_t>{8, 9, 10});
  CHECK(r.live());
}

TEST_CASE("ConvResume: a max seq learned by a periodic check pulls a lost last push") {
  ConvResume r(false, 100);
  std::vector<StoredMessage> out;
  GoLiveOnEmptyConversation(r, out);
  r.NoteMaxSeq(0);
  CHECK(!r.WantsPull());
  r.NoteMaxSeq(2);  // 1 and 2 were committed; their pushes were lost
  REQUIRE(r.WantsPull());
  CHECK(r.PullStarted() == 1);
  r.OnPulled({Msg(1), Msg(2)}, false, out);
  CHECK(Seqs(out) == std::vector<int64_t>{1, 2});
  CHECK(r.live());
}

TEST_CASE("ConvResume: pages are pulled one after the other") {
  ConvResume r(false, 100);
  std::vector<StoredMessage> out;
  r.Start(0);
  CHECK(r.PullStarted() == 1);
  r.OnPulled({Msg(1), Msg(2)}, true, out);
  REQUIRE(r.WantsPull());
  CHECK(r.PullStarted() == 3);
  r.OnPulled({Msg(3)}, false, out);
  CHECK(Seqs(out) == Range(1, 3));
  CHECK(r.live());
}

TEST_CASE("ConvResume: with a member's window, pushes only say what to pull") {
  ConvResume r(true, 100);
  std::vector<StoredMessage> out;
  GoLiveOnEmptyConversation(r, out);
  r.OnLive(Msg(1), out);
  CHECK(out.empty());  // not delivered as pushed: the window decides
  REQUIRE(r.WantsPull());
  CHECK(r.PullStarted() == 1);
  r.OnPulled({}, false, out);  // outside the window
  CHECK(out.empty());
  CHECK(r.live());
  CHECK(r.last() == 1);  // not asked for again
}

TEST_CASE("ConvResume: every interleaving of commits, pushes and pulls delivers each seq once") {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    const bool lossy = seed % 2 == 0;
    const bool from_store = seed % 5 == 0;
    const size_t max_kept = seed % 3 == 0 ? 1 : 50;
    Simulation sim(seed, lossy, from_store, max_kept);
    const std::optional<int64_t> start_at =
        seed % 4 == 0 ? std::optional<int64_t>(static_cast<int64_t>(seed % 7)) : std::nullopt;
    if (seed % 9 == 0) sim.hidden_below = 3;
    const int64_t start = sim.Run(60, start_at);
    const int64_t n = static_cast<int64_t>(sim.committed.size());
    std::vector<int64_t> want = Range(std::max(start + 1, sim.hidden_below), n);
    INFO("seed " << seed << " start " << start << " lossy " << lossy);
    CHECK(Seqs(sim.delivered) == want);
  }
}

TEST_CASE("SSE bytes: retry, message, heartbeat, dropped") {
  CHECK(SseRetry(3000) == "retry: 3000\n\n");
  std::string out;
  AppendSseMessage("12", R"({"seq":12})", out);
  CHECK(out == "id: 12\nevent: message\ndata: {\"seq\":12}\n\n");
  CHECK(kSseHeartbeat == ": hb\n\n");
  CHECK(SseDropped("a=1,b=2") ==
        "event: dropped\ndata: {\"reason\":\"slow_reader\",\"last_event_id\":\"a=1,b=2\"}\n\n");
}

TEST_CASE("SSE resume tokens: encoded, escaped, parsed back, refused when malformed") {
  const ResumePoints points = {{"a", 12}, {"sg_b.c:d@e", 0}, {"x,y=z%", 7}};
  const std::string token = EncodeResumeToken(points);
  CHECK(token == "a=12,sg_b.c:d@e=0,x%2Cy%3Dz%25=7");
  Result<ResumePoints> back = ParseResumeToken(token, 10);
  REQUIRE(back);
  CHECK(*back == points);
  for (std::string_view bad : {"", "a", "=1", "a=", "a=-1", "a=1,", "a=1,,b=2", "a=x", "a%zz=1",
                               "a=99999999999999999999"}) {
    INFO(bad);
    CHECK(!ParseResumeToken(bad, 10));
  }
  CHECK(!ParseResumeToken("a=1,b=2,c=3", 2));
}

TEST_CASE("EventSink: bounded writes, drained by the connection, room and end callbacks") {
  EventSink sink(100);
  int wakes = 0, rooms = 0, ends = 0;
  sink.SetWake([&] { ++wakes; });
  sink.SetOnRoom([&] { ++rooms; });
  sink.SetOnEnd([&] { ++ends; });
  std::string out;
  CHECK(sink.Take(out) == EventSink::Took::kIdle);
  {
    EventSink big(10);
    CHECK(big.Write(std::string(50, 'x')));  // one event over the bound: not a slow reader
    CHECK(!big.Write("y"));
  }
  CHECK(sink.Write(std::string(60, 'a')));
  CHECK(wakes == 1);
  CHECK(!sink.Write(std::string(41, 'b')));  // would pass the bound
  CHECK(sink.Write(std::string(40, 'b')));
  CHECK(wakes == 1);  // the connection was not idle any more
  CHECK(sink.pending() == 100);
  CHECK(!sink.HasRoom());
  REQUIRE(sink.Take(out) == EventSink::Took::kBytes);
  CHECK(out.size() == 100);
  CHECK(!sink.Write("x"));  // in flight counts
  sink.Written(60);
  CHECK(rooms == 1);  // 40 left: at most half
  sink.Written(40);
  CHECK(rooms == 1);
  sink.WriteUnbounded(std::string(500, 'c'));  // the replay's own flow control
  CHECK(sink.pending() == 500);
  sink.CloseAfter("bye");
  CHECK(!sink.open());
  CHECK(!sink.Write("late"));
  out.clear();
  REQUIRE(sink.Take(out) == EventSink::Took::kBytes);
  CHECK(out.size() == 503);
  CHECK(out.ends_with("bye"));
  sink.Written(503);
  CHECK(sink.Take(out) == EventSink::Took::kClose);
  CHECK(ends == 0);
  sink.End();
  sink.End();
  CHECK(ends == 1);
  int late = 0;
  sink.SetOnEnd([&] { ++late; });  // over already: runs at once
  CHECK(late == 1);
}

TEST_CASE("StreamLimits: per token, in all, released with the slot, cancelled at shutdown") {
  auto limits = std::make_shared<StreamLimits>(3, 2);
  StreamLimits::Refusal why = StreamLimits::Refusal::kNone;
  int cancelled = 0;
  auto a1 = limits->Acquire(
      "a", [&] { ++cancelled; }, &why);
  auto a2 = limits->Acquire(
      "a", [&] { ++cancelled; }, &why);
  REQUIRE(a1);
  REQUIRE(a2);
  CHECK(!limits->Acquire("a", nullptr, &why));
  CHECK(why == StreamLimits::Refusal::kPerToken);
  auto open = limits->Acquire(
      "", [&] { ++cancelled; }, &why);  // tokens off: total only
  REQUIRE(open);
  CHECK(!limits->Acquire("b", nullptr, &why));
  CHECK(why == StreamLimits::Refusal::kTotal);
  a1.reset();
  CHECK(limits->held() == 2);
  auto a3 = limits->Acquire(
      "a", [&] { ++cancelled; }, &why);
  REQUIRE(a3);
  limits->CancelAll();
  CHECK(cancelled == 3);
  CHECK(!limits->Acquire("c", nullptr, &why));  // after shutdown
}

TEST_CASE("RedactedTarget: access_token values never reach a log line") {
  CHECK(RedactedTarget("/events?conv=a&access_token=sqd_x-secret&from=a%3D1") ==
        "/events?conv=a&access_token=REDACTED&from=a%3D1");
  CHECK(RedactedTarget("/conversations/c/events?access_token=s") ==
        "/conversations/c/events?access_token=REDACTED");
  CHECK(RedactedTarget("/seq/k?count=2") == "/seq/k?count=2");
  CHECK(RedactedTarget("/seq/k") == "/seq/k");
}
