// Limits of the message store against a hostile client: min_seq cannot hide
// messages not sent yet, and an HTTP pull answer is capped in bytes with a
// cursor to continue.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/msg/message_service.h"
#include "server/binary/binary_dispatcher.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/string_connection.h"
#include "tests/unit/test_services.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;
using nlohmann::json;

template <typename T>
Result<T> Wait(const std::function<void(MessageService::Callback<T>)>& call) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<T>> out;
  call([&](Result<T> r) {
    std::lock_guard lock(mu);
    out.emplace(std::move(r));
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  REQUIRE(cv.wait_for(lock, 5s, [&] { return out.has_value(); }));
  return std::move(*out);
}

MessageServiceOptions SmallPulls() {
  MessageServiceOptions o;
  o.max_pull_bytes = 2048;
  return o;
}

struct World {
  explicit World(MessageServiceOptions o = SmallPulls())
      : messages(message_store, id_store, o),
        allocator(ids, db, clock, KeyRules(), AllocatorOptions{}),
        services(ids, db, allocator, {.messages = &messages}),
        router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()}),
        dispatcher(services, BinaryDispatchLimits{}),
        conn(dispatcher) {}

  void Send(const std::string& conv, int n, size_t payload_bytes) {
    for (int i = 0; i < n; ++i) {
      SendRequest r{conv, "amy", conv + "-" + std::to_string(sent++), 1,
                    std::string(payload_bytes, 'x')};
      REQUIRE(Wait<AppendOutcome>([&](auto done) { messages.Send(r, std::move(done)); }).ok());
    }
  }

  std::pair<unsigned, json> Http(http::verb method, std::string target, std::string body = "") {
    // The answer comes from the message service's threads: up to 5 s.
    ApiRouter::Response out =
        AwaitAnswer(router, JsonRequest(method, std::move(target), std::move(body)), 250, [] {});
    return {out.result_int(), json::parse(out.body())};
  }

  MemoryMessageStore message_store;
  MemoryStore id_store;
  MessageService messages;
  MemoryStore ids;
  ThreadPoolRunner db{1};
  ManualClock clock;
  SegmentAllocator allocator;
  TestServices services;
  ApiRouter router;
  BinaryDispatcher dispatcher;
  StringConnection conn;
  int sent = 0;
  // Last: the database thread is done before anything above goes.
  StopRunnerOnExit stop_db{db};
};

std::vector<int64_t> Seqs(const json& page) {
  std::vector<int64_t> out;
  for (const json& m : page["messages"]) out.push_back(m["seq"].get<int64_t>());
  return out;
}

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

}  // namespace

TEST_CASE("message bounds: min_seq above max seq + 1 is refused everywhere") {
  World w;
  w.Send("sg_c", 3, 1);  // max seq 3

  // The service: up to max + 1 is fine (hides everything sent so far).
  auto ok = Wait<int64_t>([&](auto done) { w.messages.SetConvMinSeq("sg_c", 4, done); });
  CHECK(ok.ok());
  for (int64_t bad : {int64_t{5}, kHuge}) {
    auto r = Wait<int64_t>([&](auto done) { w.messages.SetConvMinSeq("sg_c", bad, done); });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK(r.error().message.find("max seq") != std::string::npos);
    auto m = Wait<MemberView>(
        [&](auto done) { w.messages.SetMember("sg_c", "bob", bad, std::nullopt, false, done); });
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().code == ErrorCode::kInvalidArgument);
  }
  // A member at max + 1 is fine; moving an existing member past it is not.
  CHECK(Wait<MemberView>([&](auto done) {
          w.messages.SetMember("sg_c", "bob", 4, std::nullopt, false, done);
        }).ok());
  auto moved = Wait<MemberView>(
      [&](auto done) { w.messages.SetMember("sg_c", "bob", 9, std::nullopt, false, done); });
  CHECK_FALSE(moved.ok());
  // An empty conversation: only 1.
  CHECK_FALSE(
      Wait<int64_t>([&](auto done) { w.messages.SetConvMinSeq("sg_empty", 2, done); }).ok());

  // HTTP: 400 invalid_argument, and the conversation stays readable.
  auto [status, body] =
      w.Http(http::verb::put, "/conversations/sg_c/min_seq", R"({"min_seq":9223372036854775807})");
  CHECK(status == 400);
  CHECK(body["error"]["code"] == "invalid_argument");
  std::tie(status, body) =
      w.Http(http::verb::put, "/conversations/sg_c/members/carol", R"({"min_seq":100})");
  CHECK(status == 400);
  CHECK(w.Http(http::verb::put, "/conversations/sg_c/min_seq", R"({"min_seq":1})").first == 200);
  std::tie(status, body) = w.Http(http::verb::get, "/conversations/sg_c/messages?from=1");
  CHECK(Seqs(body) == std::vector<int64_t>{1, 2, 3});

  // Binary: INVALID_ARGUMENT for SET_CONV_MIN_SEQ and SET_MEMBER.
  std::string frame;
  proto::AppendRequest(frame, 1, proto::SetConvMinSeqReq{"sg_c", kHuge});
  std::string answer = w.conn.Call(frame, w.clock);
  CHECK(AnswerView(answer).status == proto::Status::kInvalidArgument);
  frame.clear();
  proto::AppendRequest(frame, 2, proto::SetMemberReq{"sg_c", "dan", kHuge, std::nullopt, false});
  answer = w.conn.Call(frame, w.clock);
  CHECK(AnswerView(answer).status == proto::Status::kInvalidArgument);
}

TEST_CASE("pull cap: an HTTP pull stops at max_pull_bytes and says where to go on") {
  World w;  // 2048 bytes per answer
  w.Send("sg_p", 10, 500);

  // Ascending: pages of a few messages, each with next_from, until is_end.
  std::vector<int64_t> all;
  int64_t from = 1;
  int pages = 0;
  for (;;) {
    auto [status, body] = w.Http(
        http::verb::get, "/conversations/sg_p/messages?limit=100&from=" + std::to_string(from));
    REQUIRE(status == 200);
    ++pages;
    REQUIRE(pages < 20);
    const std::vector<int64_t> seqs = Seqs(body);
    REQUIRE_FALSE(seqs.empty());
    CHECK(body.dump().size() < 2048 + 600);  // the cap, give or take one message
    all.insert(all.end(), seqs.begin(), seqs.end());
    if (body["is_end"].get<bool>()) {
      CHECK_FALSE(body.contains("next_from"));
      break;
    }
    REQUIRE(body.contains("next_from"));
    CHECK(body["next_from"] == seqs.back() + 1);
    from = body["next_from"].get<int64_t>();
  }
  CHECK(pages >= 3);
  CHECK(all == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});

  // Descending: next_to.
  auto [status, body] = w.Http(http::verb::get, "/conversations/sg_p/messages?order=desc");
  REQUIRE(status == 200);
  CHECK_FALSE(body["is_end"].get<bool>());
  CHECK(body["next_to"] == Seqs(body).back() - 1);
  CHECK(Seqs(body).front() == 10);

  // By seqs: the leading ones, then where to continue.
  std::tie(status, body) =
      w.Http(http::verb::get, "/conversations/sg_p/messages?seqs=1,2,3,4,5,6,7,8");
  REQUIRE(status == 200);
  CHECK_FALSE(body["is_end"].get<bool>());
  CHECK(body["next_from"] == Seqs(body).back() + 1);
  CHECK(Seqs(body).size() < 8);

  // One message bigger than the cap still comes (progress), alone.
  w.Send("sg_big", 2, 4000);
  std::tie(status, body) = w.Http(http::verb::get, "/conversations/sg_big/messages");
  CHECK(Seqs(body) == std::vector<int64_t>{1});
  CHECK(body["next_from"] == 2);

  // Under the cap nothing changes: is_end true, no cursor.
  std::tie(status, body) = w.Http(http::verb::get, "/conversations/sg_p/messages?from=10");
  CHECK(body["is_end"].get<bool>());
  CHECK_FALSE(body.contains("next_from"));
}

}  // namespace seqd
