// CLUSTER_MAP's result codec: a round trip, and every malformed result
// refused (never a crash, never an index out of range).
#include "proto/cluster_codec.h"

#include <doctest/doctest.h>

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
