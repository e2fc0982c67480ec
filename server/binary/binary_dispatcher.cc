#include "server/binary/binary_dispatcher.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "proto/cluster_codec.h"
#include "proto/id_codec.h"
#include "proto/snowflake_codec.h"
#include "server/base/log.h"
#include "server/service/cluster_api.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"
#include "server/service/snowflake_api.h"
#include "server/binary/binary_dispatcher_impl.h"
#include "server/binary/binary_ops.h"

namespace seqd {

BinaryDispatcher::BinaryDispatcher(const Services& services, BinaryDispatchLimits limits)
    : services_(services), limits_(limits) {}

void BinaryDispatcher::Handle(const proto::FrameView& f, BinaryConnection& c) {
  const auto opcode = static_cast<proto::Opcode>(f.opcode);
  // A gathered run is taken before any other op, which may read or change
  // what it takes from (NEXT_IDS decides for itself).
  if (opcode != proto::Opcode::kNextIds && c.runs().open()) TakeRun(c);
  if (opcode == proto::Opcode::kAuth) return HandleAuth(f, c);
  if (opcode != proto::Opcode::kPing) {
    Access& access = c.access();
    access.Revalidate(services_.auth);  // a reload may have revoked or changed the token
    if (!access.principal()) {
      access.AuditUnauthenticated(BinaryOpLabel(f.opcode));
      return AnswerError(c, opcode, f.request_id, proto::Status::kUnauthenticated,
                         "send AUTH with a token first");
    }
  }
  switch (opcode) {
    case proto::Opcode::kPing:
      if (f.payload.size() > proto::kMaxPingPayload) {
        return AnswerError(c, proto::Opcode::kPing, f.request_id, proto::Status::kInvalidArgument,
                           "PING payload must be at most 1024 bytes");
      }
      Count(f.opcode, f.request_id, proto::Status::kOk);
      proto::AppendOkPing(c.out(), f.request_id, f.payload);
      c.Queued();
      return;
    case proto::Opcode::kNextIds:
      return HandleNextIds(f, c);
    default:
      if (proto::IsIdOpcode(f.opcode)) return HandleIdOp(f, c);
      if (proto::IsMessageOpcode(f.opcode)) return HandleMessageOp(f, c);
      if (services_.snowflake.enabled() && proto::IsSnowflakeOpcode(f.opcode)) {
        if (!Permit(f, c)) return;
        return HandleSnowflakeOp(f, c);
      }
      if (services_.cluster && f.opcode == static_cast<uint8_t>(proto::kOpClusterMap)) {
        return HandleClusterMap(f, c);  // any token: clients that route themselves need it
      }
      if (services_.cluster && f.opcode == static_cast<uint8_t>(proto::kOpClusterNudge)) {
        if (!Permit(f, c)) return;
        services_.cluster->Nudge();
        Count(f.opcode, f.request_id, proto::Status::kOk);
        proto::AppendFrame(c.out(), proto::kOpClusterNudge, proto::kFlagResponse, f.request_id,
                           std::string_view("\0\0", 2));  // status OK, empty result
        c.Queued();
        return;
      }
      if (f.opcode == static_cast<uint8_t>(proto::kOpPlacement)) return HandlePlacement(f, c);
      break;
  }
  char message[32];
  std::snprintf(message, sizeof(message), "unknown opcode 0x%02x", unsigned{f.opcode});
  Count(0xff, f.request_id, proto::Status::kUnknownOpcode);
  proto::AppendError(c.out(), static_cast<proto::Opcode>(f.opcode), f.request_id,
                     proto::Status::kUnknownOpcode, message);
  c.Queued();
}

// --- AUTH ------------------------------------------------------------------------

void BinaryDispatcher::HandleAuth(const proto::FrameView& f, BinaryConnection& c) {
  constexpr auto kOp = proto::Opcode::kAuth;
  if (f.payload.empty() || f.payload.size() > proto::kMaxAuthSecret) {
    return AnswerError(c, kOp, f.request_id, proto::Status::kInvalidArgument,
                       "AUTH payload must be the token's secret, 1-256 bytes");
  }
  Access next = IdentifyBy(services_.auth, f.payload, "binary", c.access().peer());
  if (next.throttled() > 0) {  // the address failed too often: not even tried
    AnswerError(c, kOp, f.request_id, proto::Status::kResourceExhausted,
                next.ThrottledError().message);
    if (++c.failed_auths >= kMaxFailedAuths) c.CloseAfterAnswers();
    return;
  }
  if (!next.principal()) {
    AnswerError(c, kOp, f.request_id, proto::Status::kUnauthenticated, "unknown token");
    // Guessing secrets costs a connection every few tries.
    if (++c.failed_auths >= kMaxFailedAuths) c.CloseAfterAnswers();
    return;
  }
  c.access() = std::move(next);
  Count(f.opcode, f.request_id, proto::Status::kOk);
  proto::AppendFrame(c.out(), kOp, proto::kFlagResponse, f.request_id,
                     std::string_view("\0\0", 2));  // status OK, empty result
  c.Queued();
  // The new token may not allow what the old one subscribed to.
  RecheckSubscriptions(c);
}

bool BinaryDispatcher::Permit(const proto::FrameView& f, BinaryConnection& c,
                              std::string_view key) {
  const BinaryOpRow* row = BinaryOpFor(f.opcode);
  if (!row) {  // a handler for an op without a row: refuse rather than guess
    AnswerError(c, static_cast<proto::Opcode>(f.opcode), f.request_id, proto::Status::kInternal,
                "internal error");
    return false;
  }
  return !row->permission || PermitAs(f, c, *row->permission, key);
}

bool BinaryDispatcher::PermitAs(const proto::FrameView& f, BinaryConnection& c, Permission p,
                                std::string_view key) {
  Status s = c.access().Check(p, key, BinaryOpLabel(f.opcode));
  if (s) return true;
  const BinaryError w = ToBinaryError(s.error());
  AnswerError(c, static_cast<proto::Opcode>(f.opcode), f.request_id, w.status, w.message);
  return false;
}

// --- placement version -----------------------------------------------------------

void BinaryDispatcher::HandlePlacement(const proto::FrameView& f, BinaryConnection& c) {
  const std::optional<int64_t> told = proto::ParsePlacementVersion(f.payload);
  if (!told) {
    return AnswerError(c, proto::kOpPlacement, f.request_id, proto::Status::kInvalidArgument,
                       "PLACEMENT takes one i64 version >= 0");
  }
  PlacementApi* placement = services_.placement;  // null: no store groups, version 0
  // Heard from peers only: a newer version costs this instance a database
  // read, which a client's word must not buy.
  const Principal* who = c.access().principal();
  if (placement && *told > 0 && who && who->May(Permission::kCluster, {})) {
    placement->Heard(*told);
  }
  const int64_t version = placement ? placement->version() : 0;
  Count(f.opcode, f.request_id, proto::Status::kOk);
  proto::AppendOkPlacement(c.out(), f.request_id, version);
  c.Queued();
  c.placement_pushes = true;
  if (version > c.placement_told) c.placement_told = version;
}

// --- cluster map ---------------------------------------------------------------

void BinaryDispatcher::HandleClusterMap(const proto::FrameView& f, BinaryConnection& c) {
  if (!f.payload.empty()) {
    return AnswerError(c, proto::kOpClusterMap, f.request_id, proto::Status::kInvalidArgument,
                       "CLUSTER_MAP takes an empty payload");
  }
  const ClusterApi& node = *services_.cluster;
  proto::ClusterMapWire map;
  if (const auto snap = node.snapshot()) {
    map.shards = static_cast<uint32_t>(snap->shards.size());
    std::map<std::string_view, uint16_t> index;
    for (const auto& [id, m] : snap->members) {
      index.emplace(id, static_cast<uint16_t>(map.members.size()));
      map.members.push_back({id, m.advertise, m.live});
    }
    map.owners.reserve(snap->shards.size());
    for (const auto& s : snap->shards) {
      auto it = index.find(s.owner);
      map.owners.push_back(it == index.end() ? proto::kNoOwner : it->second);
    }
  }
  Count(f.opcode, f.request_id, proto::Status::kOk);
  proto::AppendOkClusterMap(c.out(), f.request_id, map);
  c.Queued();
}

// --- snowflake -----------------------------------------------------------------

void BinaryDispatcher::HandleSnowflakeOp(const proto::FrameView& f, BinaryConnection& c) {
  SnowflakeApi& gen = services_.snowflake;
  const uint32_t id = f.request_id;
  if (static_cast<proto::Opcode>(f.opcode) == proto::kOpSnowflake) {
    const auto op = proto::kOpSnowflake;
    const std::optional<uint32_t> count = proto::ParseSnowflakeRequest(f.payload);
    if (!count) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "SNOWFLAKE payload must be u32 count");
    }
    // The generator checks 1 <= count <= its max; the answer must also fit
    // in a frame whatever that max is.
    if (*count > proto::kMaxSnowflakeIdsPerFrame) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "count must be at most " +
                             std::to_string(proto::kMaxSnowflakeIdsPerFrame) + " per frame");
    }
    // Answered inline, or later from the generator's timer thread.
    gen.Next(*count, Later<SnowflakeIds>(c, op, id,
                                         [](std::string& out, uint32_t rid, const SnowflakeIds& v) {
                                           proto::AppendOkSnowflake(out, rid, v.data(), v.size());
                                         }));
    return;
  }
  const auto op = proto::kOpSnowflakeDecode;
  const std::optional<int64_t> raw = proto::ParseSnowflakeDecodeRequest(f.payload);
  if (!raw) {
    return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                       "SNOWFLAKE_DECODE payload must be i64 id");
  }
  const Result<SnowflakeFields> fields = gen.Decode(*raw);  // pure: answered at once
  auto encode = [](std::string& out, uint32_t rid, const SnowflakeFields& v) {
    proto::AppendOkSnowflakeDecode(out, rid, {v.time_ms, v.worker, v.sequence});
  };
  WriteResult(c, op, id, fields, encode);
}

// --- answers ---------------------------------------------------------------------

void BinaryDispatcher::Count(uint8_t opcode, uint32_t id, proto::Status status) {
  RequestMetrics& metrics = services_.metrics;
  if (status == proto::Status::kOk) {
    metrics.CountRequest(Interface::kBinary, BinaryOpLabel(opcode), "ok");
    return;
  }
  const std::string_view label = MetricLabelFor(status);
  metrics.CountRequest(Interface::kBinary, BinaryOpLabel(opcode), label);
  if (status == proto::Status::kStoreUnavailable || status == proto::Status::kInternal) {
    SEQD_LOG(kWarn) << "binary request_id=" << id << " op=" << BinaryOpLabel(opcode)
                    << " status=" << label;
  } else {
    SEQD_LOG(kDebug) << "binary request_id=" << id << " op=" << BinaryOpLabel(opcode)
                     << " status=" << label;
  }
}

void BinaryDispatcher::CountProtocolError(proto::Status status) {
  services_.metrics.CountRequest(Interface::kBinary,
                                 BinaryOpLabel(static_cast<uint8_t>(proto::Opcode::kProtocolError)),
                                 MetricLabelFor(status));
}

void BinaryDispatcher::AnswerError(BinaryConnection& c, proto::Opcode op, uint32_t id,
                                   proto::Status status, std::string_view message) {
  Count(static_cast<uint8_t>(op), id, status);
  proto::AppendError(c.out(), op, id, status, message);
  c.Queued();
}

}  // namespace seqd
