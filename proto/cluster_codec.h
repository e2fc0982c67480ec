// The binary protocol's cluster ops (docs/protocol.md, "Cluster ops"):
// CLUSTER_MAP, with which clients learn which instance owns each shard and
// route keys straight to it (docs/cluster.md), and CLUSTER_NUDGE (empty
// request, empty OK result), with which one instance asks another to run
// its lease round now (after a handoff, a join or a leave).
//
// Request: empty payload. OK result:
//   u32 shards, u16 n, n × (str instance, str advertise, u8 live),
//   u32 m, m × u16 owner
// where owner is an index into the members, or 0xFFFF for none; m is
// `shards`, or 0 while the server has not read the cluster tables yet.
// A server without cluster mode answers UNKNOWN_OPCODE.
//
// PLACEMENT (store groups, docs/cluster.md "Store groups"): the version of
// the shard -> store group map, both ways, as `i64 version` (>= 0):
//   - a push (request id 0, flags RESPONSE|PUSH, payload u16 status 0 then
//     the version): the server's version, sent on a connection before the
//     first answer written after it rose above the last one sent there;
//   - a request (an instance forwarding to another: its own version), whose
//     OK result is the server's version.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/binary_codec.h"

namespace seqd::proto {

inline constexpr Opcode kOpClusterMap = static_cast<Opcode>(0x40);
inline constexpr Opcode kOpClusterNudge = static_cast<Opcode>(0x41);
inline constexpr Opcode kOpPlacement = static_cast<Opcode>(0x42);
inline constexpr uint16_t kNoOwner = 0xFFFF;

struct ClusterMapWire {
  struct Member {
    std::string instance;
    std::string advertise;  // host:port of its binary protocol
    bool live = false;
    bool operator==(const Member&) const = default;
  };
  uint32_t shards = 0;
  std::vector<Member> members;   // at most 0xFFFE
  std::vector<uint16_t> owners;  // by shard: index into members, or kNoOwner
  bool operator==(const ClusterMapWire&) const = default;
};

// Appends a whole OK response frame. REQUIRES: members.size() < kNoOwner,
// each string at most 0xFFFF bytes, and the frame within kMaxFrameSize.
void AppendOkClusterMap(std::string& out, uint32_t request_id, const ClusterMapWire& map);
// nullopt unless `result` is exactly the layout above with valid indexes.
std::optional<ClusterMapWire> ParseClusterMapResult(std::string_view result);

// PLACEMENT frames, whole. REQUIRES: version >= 0.
void AppendPlacementPush(std::string& out, int64_t version);
void AppendPlacementRequest(std::string& out, uint32_t request_id, int64_t version);
void AppendOkPlacement(std::string& out, uint32_t request_id, int64_t version);
// A request's payload, an OK result or a push's result (after its status):
// nullopt unless it is exactly one i64 and not negative.
std::optional<int64_t> ParsePlacementVersion(std::string_view bytes);

}  // namespace seqd::proto
