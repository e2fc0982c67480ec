// BinaryDispatcher without sockets: request frames in, answer frames out of a
// string-backed BinaryConnection, over real services on memory stores.
#include "server/binary/binary_dispatcher.h"

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
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
#include "tests/unit/test_services.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;

// Collects answer frames. Deliveries may come from service threads, or
// inline from Handle(); a recursive mutex serializes them (the "strand").
class StringConnection final : public BinaryConnection {
 public:
  explicit StringConnection(BinaryDispatcher& d) : dispatcher_(d) {}

  std::string& out() override { return out_; }
  void Queued() override { ++queued_; }
  void Hold() override { ++held_; }
  void Deliver(std::function<void(BinaryConnection&)> write) override {
    std::lock_guard lock(mu_);
    --held_;
    write(*this);
    cv_.notify_all();
  }
  void DeliverIds(uint32_t id, Result<IdBatch> r) override {
    std::lock_guard lock(mu_);
    --held_;
    dispatcher_.WriteIds(*this, id, r);
    cv_.notify_all();
  }
  void DeliverRun(uint32_t run, Result<IdBatch> r) override {  // never batching: unused
    std::lock_guard lock(mu_);
    held_ -= static_cast<int>(runs().asks(run).size());
    dispatcher_.WriteRun(*this, run, r);
    cv_.notify_all();
  }
  void CloseAfterAnswers() override { close_after_ = true; }
  SubscriptionMap& subscriptions() override { return subs_; }
  // Like the real push box: its own lock, never the strand's (the bus calls
  // listeners under its lock, and unsubscribing on the strand takes the
  // bus's lock).
  MessageListener PushListener() override {
    return [this](const StoredMessage& m) {
      std::lock_guard lock(push_mu_);
      pushed_.push_back(m.conv_id + "#" + std::to_string(m.seq));
    };
  }

  // Sends one request frame and returns its answer's ResponseView payload.
  proto::ResponseView Call(const std::string& frame) {
    const proto::DecodeResult r = proto::DecodeFrame(frame);
    REQUIRE(r.state == proto::DecodeState::kFrame);
    {
      std::lock_guard lock(mu_);
      dispatcher_.Handle(r.frame, *this);
    }
    std::unique_lock lock(mu_);
    REQUIRE(cv_.wait_for(lock, 5s, [&] { return held_ == 0 && queued_ > answered_; }));
    const proto::DecodeResult answer = proto::DecodeFrame(out_.substr(read_));
    REQUIRE(answer.state == proto::DecodeState::kFrame);
    CHECK(answer.frame.request_id == r.frame.request_id);
    CHECK(answer.frame.is_response());
    last_ = out_.substr(read_ + proto::kHeaderSize, answer.consumed - proto::kHeaderSize);
    read_ += answer.consumed;
    ++answered_;
    auto view = proto::ParseResponse(last_);
    REQUIRE(view);
    return *view;
  }

  std::vector<std::string> pushed() {
    std::lock_guard lock(push_mu_);
    return pushed_;
  }
  bool close_after() const { return close_after_; }
  int held() const { return held_; }

 private:
  BinaryDispatcher& dispatcher_;
  std::recursive_mutex mu_;
  std::condition_variable_any cv_;
  std::string out_;
  std::string last_;
  size_t read_ = 0;
  int queued_ = 0;
  int answered_ = 0;
  int held_ = 0;
  bool close_after_ = false;
  SubscriptionMap subs_;
  std::mutex push_mu_;
  std::vector<std::string> pushed_;  // guarded by push_mu_
};

using Fixture = DispatcherFixture<StringConnection>;

}  // namespace

TEST_CASE("binary dispatcher: PING, NEXT_IDS and errors, frame in, frame out") {
  Fixture f;
  std::string ping;
  proto::AppendFrame(ping, proto::Opcode::kPing, 0, 1, "hello");
  auto r = f.conn.Call(ping);
  CHECK(r.status == proto::Status::kOk);
  CHECK(r.result == "hello");

  r = f.conn.Call(NextIdsFrame(2, "k", 3));
  REQUIRE(r.status == proto::Status::kOk);
  auto ranges = proto::ParseNextIdsResult(r.result);
  REQUIRE(ranges);
  REQUIRE(ranges->size() == 1);
  CHECK((*ranges)[0].first == 1);
  CHECK((*ranges)[0].last == 3);

  r = f.conn.Call(NextIdsFrame(3, "nokey", 1));
  CHECK(r.status == proto::Status::kUnknownKey);
  r = f.conn.Call(NextIdsFrame(4, "k", 0));
  CHECK(r.status == proto::Status::kInvalidArgument);
  CHECK(r.message.find("count must be an integer in [1, ") == 0);

  std::string unknown;
  proto::AppendFrame(unknown, static_cast<proto::Opcode>(0x10), 0, 5, "");  // snowflake is off
  CHECK(f.conn.Call(unknown).status == proto::Status::kUnknownOpcode);
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
    auto r = f.conn.Call(NextIdsFrame(7, key, 1));
    CHECK(r.status == proto::Status::kInvalidArgument);
    CHECK(r.message == "keys starting with 'seqd.' are reserved");
  }
  CHECK(f.store.GetKey("seqd.server_msg_id")->max_id == 1);  // nothing reserved
  CHECK(f.allocator.Snapshot().empty());
  // A key that only looks alike is an ordinary key.
  REQUIRE(f.store.CreateKey("seqd_x", 10, "").ok());
  CHECK(f.conn.Call(NextIdsFrame(8, "seqd_x", 1)).status == proto::Status::kOk);
}

TEST_CASE("binary dispatcher: SEND, PULL and SUBSCRIBE through the message service") {
  Fixture f;
  std::string sub;
  proto::AppendRequest(sub, 1, proto::SubscribeReq{{"sg_d"}});
  CHECK(f.conn.Call(sub).status == proto::Status::kOk);
  CHECK(f.conn.subscriptions().count("sg_d") == 1);

  for (uint32_t i = 1; i <= 3; ++i) {
    std::string send;
    const std::string cmid = "c" + std::to_string(i);
    proto::AppendRequest(send, 10 + i, proto::SendReq{"sg_d", "alice", cmid, 1, "hi"});
    auto r = f.conn.Call(send);
    REQUIRE(r.status == proto::Status::kOk);
    auto res = proto::DecodeBody<proto::SendRes>(r.result);
    REQUIRE(res);
    CHECK(res->seq == i);
  }
  std::string pull;
  proto::AppendRequest(pull, 20, proto::PullRangeReq{"sg_d", 1, 0, 100, false, ""});
  auto r = f.conn.Call(pull);
  REQUIRE(r.status == proto::Status::kOk);
  auto page = proto::DecodeBody<proto::PullRangeRes>(r.result);
  REQUIRE(page);
  CHECK(page->messages.size() == 3);
  CHECK(page->is_end);

  for (int i = 0; i < 100 && f.conn.pushed().size() < 3; ++i) std::this_thread::sleep_for(10ms);
  CHECK(f.conn.pushed() == std::vector<std::string>{"sg_d#1", "sg_d#2", "sg_d#3"});

  std::string bad;
  proto::AppendFrame(bad, proto::kOpSend, 0, 30, "x");
  CHECK(f.conn.Call(bad).status == proto::Status::kInvalidArgument);
  std::string unsub;
  proto::AppendRequest(unsub, 31, proto::UnsubscribeReq{{"sg_d"}});
  CHECK(f.conn.Call(unsub).status == proto::Status::kOk);
  CHECK(f.conn.subscriptions().empty());
}

TEST_CASE("binary dispatcher: the ID ops, held in flight and counted under their labels") {
  Fixture f;
  auto frame = [](proto::Opcode op, uint32_t id, const std::string& payload) {
    std::string out;
    proto::AppendFrame(out, op, 0, id, payload);
    return out;
  };
  auto r = f.conn.Call(frame(proto::kOpNextBlock, 1, proto::NextBlockRequestPayload("k", 4)));
  REQUIRE(r.status == proto::Status::kOk);
  auto block = proto::ParseNextBlockResult(r.result);
  REQUIRE(block);
  CHECK(*block == proto::IdRangeWire{1, 4});
  r = f.conn.Call(frame(proto::kOpNextBlock, 2, proto::NextBlockRequestPayload("k", 8)));
  REQUIRE(r.status == proto::Status::kOk);
  CHECK(proto::ParseNextBlockResult(r.result)->first > 10);  // 5..10 too short: skipped

  r = f.conn.Call(frame(proto::kOpMaxIds, 3, proto::KeyListPayload({"k", "none"})));
  REQUIRE(r.status == proto::Status::kOk);
  const int64_t last =
      proto::ParseNextBlockResult(
          f.conn.Call(frame(proto::kOpNextBlock, 4, proto::NextBlockRequestPayload("k", 1))).result)
          ->last;
  r = f.conn.Call(frame(proto::kOpMaxIds, 5, proto::KeyListPayload({"k", "none"})));
  CHECK(*proto::ParseInt64List(r.result) == std::vector<int64_t>{last, 0});

  r = f.conn.Call(frame(proto::kOpSetMinSeqs, 6, proto::KeyValueListPayload({{"k", 3}})));
  CHECK(r.status == proto::Status::kOk);
  CHECK(r.result.empty());
  r = f.conn.Call(frame(proto::kOpGetMinSeqs, 7, proto::KeyListPayload({"none", "k"})));
  CHECK(*proto::ParseInt64List(r.result) == std::vector<int64_t>{0, 3});

  // Malformed, too many, bad keys, bad values: answered, the connection open.
  CHECK(f.conn.Call(frame(proto::kOpMaxIds, 8, "\x00")).status == proto::Status::kInvalidArgument);
  CHECK(f.conn
            .Call(frame(proto::kOpGetMinSeqs, 9,
                        proto::KeyListPayload(std::vector<std::string_view>(1001, "k"))))
            .status == proto::Status::kTooLarge);
  CHECK(f.conn.Call(frame(proto::kOpMaxIds, 10, proto::KeyListPayload({"seqd.x"}))).status ==
        proto::Status::kInvalidArgument);
  CHECK(
      f.conn.Call(frame(proto::kOpSetMinSeqs, 11, proto::KeyValueListPayload({{"k", 1}, {"k", 2}})))
          .status == proto::Status::kInvalidArgument);
  CHECK(f.conn.Call(frame(proto::kOpSetMinSeqs, 12, proto::KeyValueListPayload({{"k", -1}})))
            .status == proto::Status::kInvalidArgument);
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
