// BinaryDispatcher without sockets: request frames in, answer frames out of a
// string-backed BinaryConnection, over real services on memory stores.
#include "server/binary/binary_dispatcher.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/id_codec.h"
#include "proto/message_codec.h"
#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/dispatcher_fixture.h"
#include "tests/unit/string_connection.h"
#include "tests/unit/test_services.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;

// The dispatcher fixture over a StringConnection, plus the last answer, which
// the views Call returns point into.
struct Fixture : DispatcherFixture<StringConnection> {
  // Sends one request frame and returns its answer's status and body (valid
  // until the next Call). Checks that exactly one frame came back and that it
  // is a response echoing the request's id.
  proto::ResponseView Call(const std::string& frame) {
    last_answer = conn.Call(frame, clock);
    const proto::DecodeResult request = proto::DecodeFrame(frame);
    const proto::DecodeResult answer = proto::DecodeFrame(last_answer);
    REQUIRE(answer.state == proto::DecodeState::kFrame);
    CHECK(answer.consumed == last_answer.size());
    CHECK(answer.frame.request_id == request.frame.request_id);
    CHECK(answer.frame.is_response());
    return AnswerView(last_answer);
  }

  std::string last_answer;
};

}  // namespace

TEST_CASE("binary dispatcher: PING, NEXT_IDS and errors, frame in, frame out") {
  Fixture f;
  std::string ping;
  proto::AppendFrame(ping, proto::Opcode::kPing, 0, 1, "hello");
  auto r = f.Call(ping);
  CHECK(r.status == proto::Status::kOk);
  CHECK(r.result == "hello");

  r = f.Call(NextIdsFrame(2, "k", 3));
  REQUIRE(r.status == proto::Status::kOk);
  auto ranges = proto::ParseNextIdsResult(r.result);
  REQUIRE(ranges);
  REQUIRE(ranges->size() == 1);
  CHECK((*ranges)[0].first == 1);
  CHECK((*ranges)[0].last == 3);

  r = f.Call(NextIdsFrame(3, "nokey", 1));
  CHECK(r.status == proto::Status::kUnknownKey);
  r = f.Call(NextIdsFrame(4, "k", 0));
  CHECK(r.status == proto::Status::kInvalidArgument);
  CHECK(r.message.find("count must be an integer in [1, ") == 0);

  std::string unknown;
  proto::AppendFrame(unknown, static_cast<proto::Opcode>(0x10), 0, 5, "");  // snowflake is off
  CHECK(f.Call(unknown).status == proto::Status::kUnknownOpcode);
  CHECK(f.conn.held() == 0);
  CHECK_FALSE(f.conn.close_after());

  const std::string text = f.services.metrics().Render();
  CHECK(text.find(R"(seqd_requests_total{interface="binary",op="next_ids",status="ok"} 1)") !=
        std::string::npos);
}

TEST_CASE("binary dispatcher: NEXT_IDS refuses the reserved namespace as a bad key") {
  Fixture f;
  // Even with a row (the message service's own): nothing is handed out.
  REQUIRE(f.store.CreateKey("seqd.server_msg_id", 10, "").ok());
  for (std::string_view key : {"seqd.server_msg_id", "seqd.other"}) {
    INFO(key);
    auto r = f.Call(NextIdsFrame(7, key, 1));
    CHECK(r.status == proto::Status::kInvalidArgument);
    CHECK(r.message == "keys starting with 'seqd.' are reserved");
  }
  CHECK(f.store.GetKey("seqd.server_msg_id")->max_id == 1);  // nothing reserved
  CHECK(f.allocator.Snapshot().empty());
  // A key that only looks alike is an ordinary key.
  REQUIRE(f.store.CreateKey("seqd_x", 10, "").ok());
  CHECK(f.Call(NextIdsFrame(8, "seqd_x", 1)).status == proto::Status::kOk);
}

TEST_CASE("binary dispatcher: SEND, PULL and SUBSCRIBE through the message service") {
  Fixture f;
  std::string sub;
  proto::AppendRequest(sub, 1, proto::SubscribeReq{{"sg_d"}});
  CHECK(f.Call(sub).status == proto::Status::kOk);
  CHECK(f.conn.subscriptions().count("sg_d") == 1);

  for (uint32_t i = 1; i <= 3; ++i) {
    std::string send;
    const std::string cmid = "c" + std::to_string(i);
    proto::AppendRequest(send, 10 + i, proto::SendReq{"sg_d", "alice", cmid, 1, "hi"});
    auto r = f.Call(send);
    REQUIRE(r.status == proto::Status::kOk);
    auto res = proto::DecodeBody<proto::SendRes>(r.result);
    REQUIRE(res);
    CHECK(res->seq == i);
  }
  std::string pull;
  proto::AppendRequest(pull, 20, proto::PullRangeReq{"sg_d", 1, 0, 100, false, ""});
  auto r = f.Call(pull);
  REQUIRE(r.status == proto::Status::kOk);
  auto page = proto::DecodeBody<proto::PullRangeRes>(r.result);
  REQUIRE(page);
  CHECK(page->messages.size() == 3);
  CHECK(page->is_end);

  for (int i = 0; i < 100 && f.conn.pushed().size() < 3; ++i) std::this_thread::sleep_for(10ms);
  CHECK(f.conn.pushed() == std::vector<std::string>{"sg_d#1", "sg_d#2", "sg_d#3"});

  std::string bad;
  proto::AppendFrame(bad, proto::kOpSend, 0, 30, "x");
  CHECK(f.Call(bad).status == proto::Status::kInvalidArgument);
  std::string unsub;
  proto::AppendRequest(unsub, 31, proto::UnsubscribeReq{{"sg_d"}});
  CHECK(f.Call(unsub).status == proto::Status::kOk);
  CHECK(f.conn.subscriptions().empty());
}

TEST_CASE("binary dispatcher: the ID ops, held in flight and counted under their labels") {
  Fixture f;
  auto frame = [](proto::Opcode op, uint32_t id, const std::string& payload) {
    std::string out;
    proto::AppendFrame(out, op, 0, id, payload);
    return out;
  };
  auto r = f.Call(frame(proto::kOpNextBlock, 1, proto::NextBlockRequestPayload("k", 4)));
  REQUIRE(r.status == proto::Status::kOk);
  auto block = proto::ParseNextBlockResult(r.result);
  REQUIRE(block);
  CHECK(*block == proto::IdRangeWire{1, 4});
  r = f.Call(frame(proto::kOpNextBlock, 2, proto::NextBlockRequestPayload("k", 8)));
  REQUIRE(r.status == proto::Status::kOk);
  CHECK(proto::ParseNextBlockResult(r.result)->first > 10);  // 5..10 too short: skipped

  r = f.Call(frame(proto::kOpMaxIds, 3, proto::KeyListPayload({"k", "none"})));
  REQUIRE(r.status == proto::Status::kOk);
  const int64_t last =
      proto::ParseNextBlockResult(
          f.Call(frame(proto::kOpNextBlock, 4, proto::NextBlockRequestPayload("k", 1))).result)
          ->last;
  r = f.Call(frame(proto::kOpMaxIds, 5, proto::KeyListPayload({"k", "none"})));
  CHECK(*proto::ParseInt64List(r.result) == std::vector<int64_t>{last, 0});

  r = f.Call(frame(proto::kOpSetMinSeqs, 6, proto::KeyValueListPayload({{"k", 3}})));
  CHECK(r.status == proto::Status::kOk);
  CHECK(r.result.empty());
  r = f.Call(frame(proto::kOpGetMinSeqs, 7, proto::KeyListPayload({"none", "k"})));
  CHECK(*proto::ParseInt64List(r.result) == std::vector<int64_t>{0, 3});

  // Malformed, too many, bad keys, bad values: answered, the connection open.
  CHECK(f.Call(frame(proto::kOpMaxIds, 8, "\x00")).status == proto::Status::kInvalidArgument);
  CHECK(f.Call(frame(proto::kOpGetMinSeqs, 9,
                     proto::KeyListPayload(std::vector<std::string_view>(1001, "k"))))
            .status == proto::Status::kTooLarge);
  CHECK(f.Call(frame(proto::kOpMaxIds, 10, proto::KeyListPayload({"seqd.x"}))).status ==
        proto::Status::kInvalidArgument);
  CHECK(f.Call(frame(proto::kOpSetMinSeqs, 11, proto::KeyValueListPayload({{"k", 1}, {"k", 2}})))
            .status == proto::Status::kInvalidArgument);
  CHECK(f.Call(frame(proto::kOpSetMinSeqs, 12, proto::KeyValueListPayload({{"k", -1}}))).status ==
        proto::Status::kInvalidArgument);
  CHECK(f.conn.held() == 0);
  CHECK_FALSE(f.conn.close_after());
  const std::string text = f.services.metrics().Render();
  for (std::string_view series :
       {R"(seqd_requests_total{interface="binary",op="next_block",status="ok"} 3)",
        R"(seqd_requests_total{interface="binary",op="max_ids",status="ok"} 2)",
        R"(seqd_requests_total{interface="binary",op="min_seqs",status="ok"} 2)"}) {
    CHECK_MESSAGE(text.find(series) != std::string::npos, series);
  }
}

}  // namespace seqd
