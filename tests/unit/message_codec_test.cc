// The message-store codec against the vectors in docs/protocol.md ("Message
// store test vectors"), read from the document at test time.
#include "proto/message_codec.h"

#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/protocol_vectors.h"

using namespace seqd::proto;

namespace {

using seqd::testing::FromHex;
using seqd::testing::Vector;

// [0] good vectors, [1] bad ones.
std::vector<std::vector<Vector>> LoadVectors() {
  auto blocks = seqd::testing::LoadProtocolVectors("Message store test vectors");
  REQUIRE(blocks.size() == 2);
  REQUIRE(blocks[0].size() >= 28);
  REQUIRE(blocks[1].size() >= 5);
  return blocks;
}

// Decodes `body` as T, re-encodes it byte for byte, and checks that every
// truncation and one trailing byte are rejected.
template <typename T>
T CheckBody(std::string_view body) {
  std::optional<T> v = DecodeBody<T>(body);
  REQUIRE(v);
  std::string again;
  EncodeBody(again, *v);
  CHECK(again == body);
  for (size_t k = 0; k < body.size(); ++k) {
    CHECK_MESSAGE(!DecodeBody<T>(body.substr(0, k)), "truncated to " << k);
  }
  std::string longer(body);
  longer.push_back('\0');
  CHECK_FALSE(DecodeBody<T>(longer));
  return *v;
}

template <typename Req>
std::string CheckRequest(const FrameView& f) {
  Req req = CheckBody<Req>(f.payload);
  std::string out;
  AppendRequest(out, f.request_id, req);
  return out;
}

template <typename Res>
std::string CheckResult(const FrameView& f, std::string_view result) {
  Res res = CheckBody<Res>(result);
  std::string out;
  AppendOkResult(out, static_cast<Opcode>(f.opcode), f.request_id, res);
  return out;
}

// Re-encodes a message-store frame, checking its payload on the way.
std::string Reencode(const FrameView& f) {
  const Opcode op = static_cast<Opcode>(f.opcode);
  if (!f.is_response()) {
    CHECK(f.flags == 0);
    if (op == kOpSend) return CheckRequest<SendReq>(f);
    if (op == kOpPullRange) return CheckRequest<PullRangeReq>(f);
    if (op == kOpPullSeqs) return CheckRequest<PullSeqsReq>(f);
    if (op == kOpMaxSeqs) return CheckRequest<MaxSeqsReq>(f);
    if (op == kOpSyncUser) return CheckRequest<SyncUserReq>(f);
    if (op == kOpMarkRead) return CheckRequest<MarkReadReq>(f);
    if (op == kOpSetMember) return CheckRequest<SetMemberReq>(f);
    if (op == kOpGetMember) return CheckRequest<GetMemberReq>(f);
    if (op == kOpSetStatus) return CheckRequest<SetStatusReq>(f);
    if (op == kOpSetConvMinSeq) return CheckRequest<SetConvMinSeqReq>(f);
    if (op == kOpSubscribe) return CheckRequest<SubscribeReq>(f);
    if (op == kOpUnsubscribe) return CheckRequest<UnsubscribeReq>(f);
    FAIL("no request type for opcode " << int{f.opcode});
  }
  std::optional<ResponseView> resp = ParseResponse(f.payload);
  REQUIRE(resp);
  std::string out;
  if (IsPush(f)) {
    CHECK(f.request_id == 0);
    if (op == kOpPushMessage) {
      REQUIRE(resp->status == Status::kOk);
      AppendPushMessage(out, CheckBody<PushMessage>(resp->result));
    } else {
      REQUIRE(op == kOpPushDropped);
      AppendPushDropped(out, resp->status, resp->message);
    }
    return out;
  }
  if (resp->status != Status::kOk) {
    AppendError(out, op, f.request_id, resp->status, resp->message);
    return out;
  }
  const std::string_view r = resp->result;
  if (op == kOpSend) return CheckResult<SendRes>(f, r);
  if (op == kOpPullRange) return CheckResult<PullRangeRes>(f, r);
  if (op == kOpPullSeqs) return CheckResult<PullSeqsRes>(f, r);
  if (op == kOpMaxSeqs) return CheckResult<MaxSeqsRes>(f, r);
  if (op == kOpSyncUser) return CheckResult<SyncUserRes>(f, r);
  if (op == kOpMarkRead || op == kOpSetMember || op == kOpGetMember) {
    return CheckResult<MemberRes>(f, r);
  }
  if (op == kOpSetStatus) return CheckResult<MessageRes>(f, r);
  if (op == kOpSetConvMinSeq) return CheckResult<MinSeqRes>(f, r);
  if (op == kOpSubscribe || op == kOpUnsubscribe) return CheckResult<EmptyRes>(f, r);
  FAIL("no result type for opcode " << int{f.opcode});
  return out;
}

FrameView Decode(const std::string& bytes) {
  DecodeResult r = DecodeServerFrame(bytes);
  REQUIRE(r.state == DecodeState::kFrame);
  REQUIRE(r.consumed == bytes.size());
  return r.frame;
}

}  // namespace

TEST_CASE("message codec: every vector decodes, re-encodes byte for byte, rejects truncation") {
  const auto blocks = LoadVectors();
  std::set<uint8_t> seen;
  for (const Vector& v : blocks[0]) {
    INFO(v.comment);
    for (size_t k = 0; k < v.bytes.size(); ++k) {
      CHECK(DecodeServerFrame(v.bytes.substr(0, k)).state == DecodeState::kNeedMore);
    }
    const FrameView f = Decode(v.bytes);
    CHECK(IsMessageOpcode(f.opcode));
    const bool push = v.comment.find(" push") != std::string::npos;
    const bool response = v.comment.find("response") != std::string::npos;
    CHECK(f.is_response() == (push || response));
    CHECK(IsPush(f) == push);
    // The server's request decoder takes requests and refuses PUSH frames.
    const DecodeResult strict = DecodeFrame(v.bytes);
    if (push) {
      CHECK(strict.state == DecodeState::kError);
      CHECK(strict.error == Status::kMalformedFrame);
    } else {
      CHECK(strict.state == DecodeState::kFrame);
    }
    CHECK(Reencode(f) == v.bytes);
    seen.insert(f.opcode);
  }
  // Every opcode has a vector.
  for (uint8_t op = 0x20; op <= 0x2D; ++op) CHECK_MESSAGE(seen.count(op), "opcode " << int{op});
}

TEST_CASE("message codec: vectors carry the values their comments name") {
  const auto blocks = LoadVectors();
  const auto& good = blocks[0];
  auto send = DecodeBody<SendReq>(Decode(good[0].bytes).payload);
  REQUIRE(send);
  CHECK(send->conv_id == "sg_1");
  CHECK(send->sender_id == "u1");
  CHECK(send->client_msg_id == "c1");
  CHECK(send->content_type == 101);
  CHECK(send->payload == "hi");

  auto sent = ParseResponse(Decode(good[1].bytes).payload);
  REQUIRE(sent);
  auto res = DecodeBody<SendRes>(sent->result);
  REQUIRE(res);
  CHECK(*res == SendRes{5, 4097, 1795360448589, false});

  auto pull = DecodeBody<PullRangeReq>(Decode(good[4].bytes).payload);
  REQUIRE(pull);
  CHECK(pull->descending);
  CHECK(pull->to_seq == 9);
  CHECK(pull->limit == 2);
  CHECK(pull->user_id == "u2");

  auto page = DecodeBody<PullRangeRes>(ParseResponse(Decode(good[5].bytes).payload)->result);
  REQUIRE(page);
  CHECK(page->is_end);
  REQUIRE(page->messages.size() == 2);
  CHECK(page->messages[0].payload == "hi");
  CHECK(page->messages[1].status == 1);
  CHECK(page->messages[1].payload.empty());

  auto member = DecodeBody<SetMemberReq>(Decode(good[15].bytes).payload);
  REQUIRE(member);
  CHECK_FALSE(member->min_seq);
  CHECK(member->max_seq == 7);
  CHECK_FALSE(member->clear_max);

  const FrameView conflict_frame = Decode(good.back().bytes);
  auto conflict = ParseResponse(conflict_frame.payload);
  REQUIRE(conflict);
  CHECK(static_cast<Opcode>(conflict_frame.opcode) == kOpSend);
  CHECK(conflict->status == Status::kMessageIdConflict);
  CHECK(conflict->message == "client_msg_id in use");
}

TEST_CASE("message codec: bad request vectors do not parse") {
  const auto blocks = LoadVectors();
  for (const Vector& v : blocks[1]) {
    INFO(v.comment);
    const FrameView f = Decode(v.bytes);
    const Opcode op = static_cast<Opcode>(f.opcode);
    bool parsed = true;
    if (op == kOpMaxSeqs) parsed = DecodeBody<MaxSeqsReq>(f.payload).has_value();
    if (op == kOpPullRange) parsed = DecodeBody<PullRangeReq>(f.payload).has_value();
    if (op == kOpSetStatus) parsed = DecodeBody<SetStatusReq>(f.payload).has_value();
    if (op == kOpSetMember) parsed = DecodeBody<SetMemberReq>(f.payload).has_value();
    if (op == kOpGetMember) parsed = DecodeBody<GetMemberReq>(f.payload).has_value();
    CHECK_FALSE(parsed);
  }
}

TEST_CASE("message codec: huge counts are rejected without allocating for them") {
  const std::string huge("\xff\xff\xff\xff", 4);
  CHECK_FALSE(DecodeBody<MaxSeqsReq>(huge));
  CHECK_FALSE(DecodeBody<SubscribeReq>(huge));
  CHECK_FALSE(DecodeBody<MaxSeqsRes>(huge));
  CHECK_FALSE(DecodeBody<PullSeqsRes>(huge));
  CHECK_FALSE(DecodeBody<SyncUserRes>(huge));
  CHECK_FALSE(DecodeBody<PullRangeRes>(std::string(1, '\1') + huge));
  CHECK_FALSE(DecodeBody<PullSeqsReq>(std::string(4, '\0') + huge));
  CHECK_FALSE(DecodeBody<SyncUserReq>(std::string("\0\1u", 3) + huge));
  // A count the bytes almost hold.
  std::string seqs("\0\0\0\0\0\0\0\3", 8);  // no conv, no user, 3 seqs
  seqs += std::string(8 * 2, '\0');
  CHECK_FALSE(DecodeBody<PullSeqsReq>(seqs));
  seqs += std::string(8, '\0');
  CHECK(DecodeBody<PullSeqsReq>(seqs));
  // A payload length past the end.
  SendReq s{"c", "u", "m", 1, "xyz"};
  std::string body;
  EncodeBody(body, s);
  body[body.size() - 4] = '\x7f';
  CHECK_FALSE(DecodeBody<SendReq>(body));
}

TEST_CASE("message codec: random values round-trip") {
  std::mt19937_64 rng(42);
  std::vector<std::string> strings;
  for (int i = 0; i < 200; ++i) strings.push_back(std::string(rng() % 20, char('a' + i % 26)));
  auto str = [&] { return std::string_view(strings[rng() % strings.size()]); };
  for (int round = 0; round < 200; ++round) {
    PullRangeRes page;
    page.is_end = rng() % 2;
    for (size_t i = 0, n = rng() % 5; i < n; ++i) {
      page.messages.push_back(MessageView{int64_t(rng()), int64_t(rng()), str(), str(),
                                          int32_t(rng()), uint8_t(rng() % 3), int64_t(rng()),
                                          str()});
    }
    std::string body;
    EncodeBody(body, page);
    size_t expect = 5;
    for (const auto& m : page.messages) expect += EncodedSize(m);
    CHECK(body.size() == expect);
    CHECK(DecodeBody<PullRangeRes>(body) == page);

    SetMemberReq m;
    m.conv_id = str();
    m.user_id = str();
    if (rng() % 2) m.min_seq = int64_t(rng());
    if (rng() % 2) m.max_seq = int64_t(rng());
    m.clear_max = rng() % 2;
    body.clear();
    EncodeBody(body, m);
    CHECK(DecodeBody<SetMemberReq>(body) == m);
  }
}

TEST_CASE("message codec: server frame decoder accepts RESPONSE|PUSH only") {
  std::string push;
  AppendPushDropped(push, Status::kTooLarge, "x");
  DecodeResult r = DecodeServerFrame(push);
  REQUIRE(r.state == DecodeState::kFrame);
  CHECK(r.frame.flags == (kFlagResponse | kFlagPush));
  std::string bad = push;
  bad[7] = 0x02;  // PUSH without RESPONSE
  CHECK(DecodeServerFrame(bad).state == DecodeState::kError);
  bad[7] = 0x07;
  CHECK(DecodeServerFrame(bad).state == DecodeState::kError);
  bad = push;
  bad[4] = 2;  // version
  CHECK(DecodeServerFrame(bad).error == Status::kUnsupportedVersion);
  // Two frames back to back: the first is consumed alone.
  std::string two = push + push;
  r = DecodeServerFrame(two);
  REQUIRE(r.state == DecodeState::kFrame);
  CHECK(r.consumed == push.size());
  CHECK(MessageOpName(0x20) == "SEND");
  CHECK(MessageOpName(0x2D) == "PUSH_DROPPED");
  CHECK(MessageOpName(0x2E).empty());
}
