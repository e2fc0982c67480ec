#include "proto/cluster_codec.h"

#include "proto/message_codec.h"
#include "proto/wire_io.h"

namespace seqd::proto {
namespace {

using wire::Put16;
using wire::Put32;
using wire::Put64;
using wire::PutStr16;
using wire::Reader;

}  // namespace

void AppendOkClusterMap(std::string& out, uint32_t request_id, const ClusterMapWire& map) {
  std::string payload;
  payload.reserve(16 + map.members.size() * 64 + map.owners.size() * 2);
  Put16(payload, 0);  // status OK
  Put32(payload, map.shards);
  Put16(payload, static_cast<uint16_t>(map.members.size()));
  for (const auto& m : map.members) {
    PutStr16(payload, m.instance);
    PutStr16(payload, m.advertise);
    payload.push_back(m.live ? 1 : 0);
  }
  Put32(payload, static_cast<uint32_t>(map.owners.size()));
  for (uint16_t o : map.owners) Put16(payload, o);
  AppendFrame(out, kOpClusterMap, kFlagResponse, request_id, payload);
}

std::optional<ClusterMapWire> ParseClusterMapResult(std::string_view result) {
  Reader r(result);
  ClusterMapWire map;
  map.shards = r.U32();
  const size_t n = r.U16();
  if (!r.ok() || n >= kNoOwner) return std::nullopt;
  for (size_t i = 0; i < n && r.ok(); ++i) {
    ClusterMapWire::Member m;
    m.instance = std::string(r.Str());
    m.advertise = std::string(r.Str());
    const uint32_t live = r.U8();
    if (live > 1) return std::nullopt;
    m.live = live == 1;
    map.members.push_back(std::move(m));
  }
  const size_t count = r.U32();
  if (!r.ok() || (count != 0 && count != map.shards)) return std::nullopt;
  for (size_t i = 0; i < count && r.ok(); ++i) {
    const uint16_t o = static_cast<uint16_t>(r.U16());
    if (o != kNoOwner && o >= n) return std::nullopt;
    map.owners.push_back(o);
  }
  if (!r.done()) return std::nullopt;
  return map;
}

namespace {

// status OK, then the version.
std::string OkVersion(int64_t version) {
  std::string payload;
  Put16(payload, 0);
  Put64(payload, version);
  return payload;
}

}  // namespace

void AppendPlacementPush(std::string& out, int64_t version) {
  AppendFrame(out, kOpPlacement, kFlagResponse | kFlagPush, 0, OkVersion(version));
}

void AppendPlacementRequest(std::string& out, uint32_t request_id, int64_t version) {
  std::string payload;
  Put64(payload, version);
  AppendFrame(out, kOpPlacement, 0, request_id, payload);
}

void AppendOkPlacement(std::string& out, uint32_t request_id, int64_t version) {
  AppendFrame(out, kOpPlacement, kFlagResponse, request_id, OkVersion(version));
}

std::optional<int64_t> ParsePlacementVersion(std::string_view bytes) {
  Reader r(bytes);
  const int64_t version = r.I64();
  if (!r.done() || version < 0) return std::nullopt;
  return version;
}

}  // namespace seqd::proto
