// The snowflake codec against the vectors in docs/protocol.md ("Snowflake
// test vectors"), read from the document at test time.
#include "proto/snowflake_codec.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/protocol_vectors.h"

using namespace seqd::proto;

namespace {

using seqd::testing::Vector;

// [0] good vectors, [1] bad request vectors.
std::vector<std::vector<Vector>> LoadVectors() {
  auto blocks = seqd::testing::LoadProtocolVectors("Snowflake test vectors");
  REQUIRE(blocks.size() == 2);
  REQUIRE(blocks[0].size() == 7);
  REQUIRE(blocks[1].size() == 5);
  return blocks;
}

FrameView Decode(const std::string& bytes) {
  DecodeResult r = DecodeFrame(bytes);
  REQUIRE(r.state == DecodeState::kFrame);
  REQUIRE(r.consumed == bytes.size());
  return r.frame;
}

// `parse` accepts `body`, and rejects every truncation of it and it with a
// byte added.
template <typename Parse>
void CheckStrict(std::string_view body, Parse parse) {
  REQUIRE(parse(body));
  for (size_t k = 0; k < body.size(); ++k) {
    CHECK_MESSAGE(!parse(body.substr(0, k)), "truncated to " << k);
  }
  std::string longer(body);
  longer.push_back('\0');
  CHECK_FALSE(parse(longer));
}

// Re-encodes a snowflake frame from what the parsers make of it, checking
// the payload's strictness on the way.
std::string Reencode(const FrameView& f) {
  const Opcode op = static_cast<Opcode>(f.opcode);
  std::string out;
  if (!f.is_response()) {
    CHECK(f.flags == 0);
    if (op == kOpSnowflake) {
      CheckStrict(f.payload, ParseSnowflakeRequest);
      AppendSnowflakeRequest(out, f.request_id, *ParseSnowflakeRequest(f.payload));
      CHECK(SnowflakeRequestPayload(*ParseSnowflakeRequest(f.payload)) == f.payload);
    } else {
      REQUIRE(op == kOpSnowflakeDecode);
      CheckStrict(f.payload, ParseSnowflakeDecodeRequest);
      AppendSnowflakeDecodeRequest(out, f.request_id, *ParseSnowflakeDecodeRequest(f.payload));
      CHECK(SnowflakeDecodeRequestPayload(*ParseSnowflakeDecodeRequest(f.payload)) == f.payload);
    }
    return out;
  }
  std::optional<ResponseView> resp = ParseResponse(f.payload);
  REQUIRE(resp);
  if (resp->status != Status::kOk) {
    AppendError(out, op, f.request_id, resp->status, resp->message);
    return out;
  }
  if (op == kOpSnowflake) {
    CheckStrict(resp->result, ParseSnowflakeResult);
    const std::vector<int64_t> ids = *ParseSnowflakeResult(resp->result);
    AppendOkSnowflake(out, f.request_id, ids.data(), ids.size());
  } else {
    REQUIRE(op == kOpSnowflakeDecode);
    CheckStrict(resp->result, ParseSnowflakeDecodeResult);
    AppendOkSnowflakeDecode(out, f.request_id, *ParseSnowflakeDecodeResult(resp->result));
  }
  return out;
}

}  // namespace

TEST_CASE("snowflake codec: every vector decodes, re-encodes byte for byte, rejects truncation") {
  const auto blocks = LoadVectors();
  std::set<uint8_t> seen;
  for (const Vector& v : blocks[0]) {
    INFO(v.comment);
    for (size_t k = 0; k < v.bytes.size(); ++k) {
      CHECK(DecodeFrame(v.bytes.substr(0, k)).state == DecodeState::kNeedMore);
    }
    const FrameView f = Decode(v.bytes);
    CHECK(IsSnowflakeOpcode(f.opcode));
    CHECK(f.is_response() == (v.comment.find("response") != std::string::npos));
    CHECK(Reencode(f) == v.bytes);
    seen.insert(f.opcode);
  }
  CHECK(seen == std::set<uint8_t>{0x10, 0x11});
}

TEST_CASE("snowflake codec: vectors carry the values their comments name") {
  const auto good = LoadVectors()[0];
  CHECK(ParseSnowflakeRequest(Decode(good[0].bytes).payload) == 2u);

  auto ok = ParseResponse(Decode(good[1].bytes).payload);
  REQUIRE(ok);
  CHECK(ParseSnowflakeResult(ok->result) ==
        std::vector<int64_t>{2124521821414903808, 2124521821414903809});

  auto not_serving = ParseResponse(Decode(good[2].bytes).payload);
  REQUIRE(not_serving);
  CHECK(not_serving->status == Status::kNotServing);
  CHECK(not_serving->message == "no worker id leased yet");

  CHECK(ParseSnowflakeDecodeRequest(Decode(good[3].bytes).payload) == 2124521821414903809);
  auto fields = ParseResponse(Decode(good[4].bytes).payload);
  REQUIRE(fields);
  CHECK(ParseSnowflakeDecodeResult(fields->result) == SnowflakeFieldsWire{1795360448589, 5, 1});
  // The ID is the default (Leaf) layout's composition of those fields.
  constexpr int64_t kLeafEpochMs = 1288834974657;
  CHECK(((1795360448589 - kLeafEpochMs) << 22 | 5 << 12 | 1) == 2124521821414903809);

  CHECK(ParseSnowflakeDecodeRequest(Decode(good[5].bytes).payload) == -1);
  auto bad = ParseResponse(Decode(good[6].bytes).payload);
  REQUIRE(bad);
  CHECK(bad->status == Status::kInvalidArgument);
}

TEST_CASE("snowflake codec: bad request vectors do not parse") {
  const auto blocks = LoadVectors();
  for (const Vector& v : blocks[1]) {
    INFO(v.comment);
    const FrameView f = Decode(v.bytes);
    const Opcode op = static_cast<Opcode>(f.opcode);
    REQUIRE(IsSnowflakeOpcode(f.opcode));
    if (op == kOpSnowflake) {
      CHECK_FALSE(ParseSnowflakeRequest(f.payload));
    } else {
      CHECK_FALSE(ParseSnowflakeDecodeRequest(f.payload));
    }
  }
}

TEST_CASE("snowflake codec: round trips at the edges of the integer ranges") {
  for (uint32_t count : {0u, 1u, 4096u, std::numeric_limits<uint32_t>::max()}) {
    std::string frame;
    AppendSnowflakeRequest(frame, 9, count);
    CHECK(ParseSnowflakeRequest(Decode(frame).payload) == count);
  }
  for (int64_t id : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0},
                     std::numeric_limits<int64_t>::max()}) {
    std::string frame;
    AppendSnowflakeDecodeRequest(frame, 9, id);
    CHECK(ParseSnowflakeDecodeRequest(Decode(frame).payload) == id);
  }
  const std::vector<int64_t> ids{0, 1, std::numeric_limits<int64_t>::max()};
  std::string frame;
  AppendOkSnowflake(frame, 3, ids.data(), ids.size());
  auto resp = ParseResponse(Decode(frame).payload);
  REQUIRE(resp);
  CHECK(ParseSnowflakeResult(resp->result) == ids);

  frame.clear();
  AppendOkSnowflake(frame, 4, nullptr, 0);  // an empty list encodes and parses
  resp = ParseResponse(Decode(frame).payload);
  REQUIRE(resp);
  CHECK(ParseSnowflakeResult(resp->result) == std::vector<int64_t>{});

  const SnowflakeFieldsWire extremes{std::numeric_limits<int64_t>::max(), -1,
                                     std::numeric_limits<int64_t>::min()};
  frame.clear();
  AppendOkSnowflakeDecode(frame, 5, extremes);
  resp = ParseResponse(Decode(frame).payload);
  REQUIRE(resp);
  CHECK(ParseSnowflakeDecodeResult(resp->result) == extremes);
}

TEST_CASE("snowflake codec: a huge count is rejected without allocating for it") {
  const std::string huge("\xff\xff\xff\xff", 4);
  CHECK_FALSE(ParseSnowflakeResult(huge));
  CHECK_FALSE(ParseSnowflakeResult(huge + std::string(8, '\0')));
}

TEST_CASE("snowflake codec: only 0x10 and 0x11 are snowflake opcodes") {
  for (int op = 0; op <= 0xff; ++op) {
    CHECK(IsSnowflakeOpcode(static_cast<uint8_t>(op)) == (op == 0x10 || op == 0x11));
  }
}

TEST_CASE("snowflake codec: kMaxSnowflakeIdsPerFrame IDs fill a frame, one more would not") {
  const std::vector<int64_t> ids(kMaxSnowflakeIdsPerFrame, 7);
  std::string frame;
  AppendOkSnowflake(frame, 1, ids.data(), ids.size());
  CHECK(frame.size() <= kMaxFrameSize);
  CHECK(frame.size() + 8 > kMaxFrameSize);
  const DecodeResult r = DecodeFrame(frame);
  REQUIRE(r.state == DecodeState::kFrame);
  auto resp = ParseResponse(r.frame.payload);
  REQUIRE(resp);
  CHECK(ParseSnowflakeResult(resp->result) == ids);
}
