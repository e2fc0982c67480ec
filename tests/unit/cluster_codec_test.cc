// CLUSTER_MAP's result codec: a round trip, and every malformed result
// refused (never a crash, never an index out of range).
#include "proto/cluster_codec.h"

#include <doctest/doctest.h>

#include "proto/message_codec.h"
#include "tests/unit/protocol_vectors.h"

using namespace seqd::proto;

namespace {

// The result bytes of the OK frame AppendOkClusterMap writes.
std::string ResultOf(const ClusterMapWire& map) {
  std::string frame;
  AppendOkClusterMap(frame, 7, map);
  DecodeResult d = DecodeFrame(frame);
  REQUIRE(d.state == DecodeState::kFrame);
  CHECK(d.frame.opcode == static_cast<uint8_t>(kOpClusterMap));
  CHECK(d.frame.request_id == 7);
  auto resp = ParseResponse(d.frame.payload);
  REQUIRE(resp);
  REQUIRE(resp->status == Status::kOk);
  return std::string(resp->result);
}

ClusterMapWire Sample() {
  ClusterMapWire m;
  m.shards = 4;
  m.members = {{"a", "10.0.0.1:7070", true}, {"b", "10.0.0.2:7070", false}};
  m.owners = {0, 1, kNoOwner, 0};
  return m;
}

}  // namespace

TEST_CASE("cluster map: round trip, and a map not read yet") {
  CHECK(ParseClusterMapResult(ResultOf(Sample())) == Sample());
  ClusterMapWire empty;
  CHECK(ParseClusterMapResult(ResultOf(empty)) == empty);
}

TEST_CASE("cluster map: malformed results are refused") {
  const std::string good = ResultOf(Sample());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    CHECK_FALSE(ParseClusterMapResult(good.substr(0, cut)));  // every truncation
  }
  CHECK_FALSE(ParseClusterMapResult(good + "x"));  // trailing bytes
  ClusterMapWire bad = Sample();
  bad.owners[1] = 2;  // no member 2
  CHECK_FALSE(ParseClusterMapResult(ResultOf(bad)));
  bad = Sample();
  bad.owners.pop_back();  // fewer owners than shards
  CHECK_FALSE(ParseClusterMapResult(ResultOf(bad)));
  std::string live2 = good;
  live2[4 + 2 + 2 + 1 + 2 + 13] = 2;  // member a's live byte: only 0 or 1
  CHECK_FALSE(ParseClusterMapResult(live2));
}

TEST_CASE("placement: the push, the request and its answer carry one version") {
  // The push: request id 0, RESPONSE|PUSH, status OK then the version.
  std::string push;
  AppendPlacementPush(push, 42);
  DecodeResult d = DecodeServerFrame(push);
  REQUIRE(d.state == DecodeState::kFrame);
  CHECK(d.consumed == push.size());
  CHECK(d.frame.opcode == static_cast<uint8_t>(kOpPlacement));
  CHECK(d.frame.opcode == 0x42);
  CHECK(d.frame.flags == 0x0003);
  CHECK(d.frame.request_id == 0);
  auto resp = ParseResponse(d.frame.payload);
  REQUIRE(resp);
  CHECK(resp->status == Status::kOk);
  CHECK(ParsePlacementVersion(resp->result) == 42);
  // The exact bytes: u16 0, i64 big-endian.
  CHECK(d.frame.payload == std::string("\0\0\0\0\0\0\0\0\0\x2a", 10));

  std::string request;
  AppendPlacementRequest(request, 9, 7);
  d = DecodeFrame(request);
  REQUIRE(d.state == DecodeState::kFrame);
  CHECK(d.frame.flags == 0);
  CHECK(d.frame.request_id == 9);
  CHECK(ParsePlacementVersion(d.frame.payload) == 7);

  std::string answer;
  AppendOkPlacement(answer, 9, int64_t{1} << 40);
  d = DecodeServerFrame(answer);
  REQUIRE(d.state == DecodeState::kFrame);
  CHECK(d.frame.flags == kFlagResponse);
  resp = ParseResponse(d.frame.payload);
  REQUIRE(resp);
  CHECK(ParsePlacementVersion(resp->result) == int64_t{1} << 40);
}

TEST_CASE("placement: anything but one non-negative i64 is refused") {
  const std::string seven("\0\0\0\0\0\0\0\x07", 8);
  CHECK(ParsePlacementVersion(seven) == 7);
  for (size_t cut = 0; cut < seven.size(); ++cut) {
    CHECK_FALSE(ParsePlacementVersion(seven.substr(0, cut)));
  }
  CHECK_FALSE(ParsePlacementVersion(seven + "x"));
  CHECK_FALSE(ParsePlacementVersion(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8)));  // -1
  CHECK(ParsePlacementVersion(std::string(8, '\0')) == 0);
}

TEST_CASE("placement: the vectors of docs/protocol.md decode and re-encode byte for byte") {
  auto blocks = seqd::testing::LoadProtocolVectors("Placement test vectors");
  REQUIRE(blocks.size() == 2);
  REQUIRE(blocks[0].size() == 3);
  REQUIRE(blocks[1].size() == 3);
  for (const auto& v : blocks[0]) {
    CAPTURE(v.comment);
    const DecodeResult d = DecodeServerFrame(v.bytes);
    REQUIRE(d.state == DecodeState::kFrame);
    REQUIRE(d.consumed == v.bytes.size());
    CHECK(d.frame.opcode == static_cast<uint8_t>(kOpPlacement));
    std::string again;
    if (!d.frame.is_response()) {
      const auto version = ParsePlacementVersion(d.frame.payload);
      REQUIRE(version);
      AppendPlacementRequest(again, d.frame.request_id, *version);
    } else {
      auto resp = ParseResponse(d.frame.payload);
      REQUIRE(resp);
      const auto version = ParsePlacementVersion(resp->result);
      REQUIRE(version);
      const std::string_view result = resp->result;
      for (size_t k = 0; k < result.size(); ++k)
        CHECK_FALSE(ParsePlacementVersion(result.substr(0, k)));
      CHECK_FALSE(ParsePlacementVersion(std::string(result) + "x"));
      if (d.frame.flags & kFlagPush) {
        CHECK(d.frame.request_id == 0);
        AppendPlacementPush(again, *version);
      } else {
        AppendOkPlacement(again, d.frame.request_id, *version);
      }
    }
    CHECK(again == v.bytes);
  }
  for (const auto& v : blocks[1]) {
    CAPTURE(v.comment);
    const DecodeResult d = DecodeFrame(v.bytes);
    REQUIRE(d.state == DecodeState::kFrame);              // a well-formed frame...
    CHECK_FALSE(ParsePlacementVersion(d.frame.payload));  // ...whose payload is refused
  }
}
