// The op tables (HTTP, binary, RESP) and the one label path (wire_errors)
// agree with the metric series Metrics creates: every `op` and `status`
// label they can give is one Metrics knows, so nothing is silently counted
// as "other".
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "proto/binary_codec.h"
#include "server/http/http_ops.h"
#include "server/metrics/metrics.h"
#include "server/resp/resp_commands.h"
#include "server/service/wire_errors.h"
#include "server/binary/binary_ops.h"

namespace seqd {
namespace {

bool Known(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_CASE("every HTTP op row has a known op label; rows cover the enum") {
  const auto& ops = Metrics::Ops(Interface::kHttp);
  for (size_t i = 0; i <= static_cast<size_t>(HttpOp::kOther); ++i) {
    const HttpOpRow& row = HttpOpFor(static_cast<HttpOp>(i));
    CHECK(static_cast<size_t>(row.op) == i);
    CHECK_MESSAGE(Known(ops, row.metric_label), row.metric_label);
  }
  // Keyed reads and writes need their scope; health needs none.
  CHECK(HttpOpFor(HttpOp::kSeq).permission == Permission::kIds);
  CHECK(HttpOpFor(HttpOp::kMsgSetMember).permission == Permission::kMsgAdmin);
  CHECK(HttpOpFor(HttpOp::kMsgMarkRead).permission == Permission::kMsgRead);
  CHECK_FALSE(HttpOpFor(HttpOp::kHealth).permission.has_value());
}

TEST_CASE("every binary op row has a known op label, and unknown opcodes have none") {
  const auto& ops = Metrics::Ops(Interface::kBinary);
  std::set<uint8_t> seen;
  for (const BinaryOpRow& row : BinaryOps()) {
    CHECK_MESSAGE(Known(ops, row.metric_label), row.metric_label);
    CHECK(seen.insert(row.opcode).second);
    CHECK(BinaryOpFor(row.opcode) == &row);
  }
  CHECK(BinaryOpFor(0x00) == nullptr);
  CHECK(BinaryOpFor(0x2C) == nullptr);  // PUSH_MESSAGE: server to client only
  CHECK(BinaryOpLabel(0xEE) == "protocol_error");
  CHECK(BinaryOpFor(0x02)->permission == Permission::kIds);
  CHECK_FALSE(BinaryOpFor(0x01)->permission.has_value());  // PING
}

TEST_CASE("every RESP op row has a known op label") {
  const auto& ops = Metrics::Ops(Interface::kResp);
  for (RespOp op : {RespOp::kIncr, RespOp::kIncrBy, RespOp::kPing, RespOp::kOther}) {
    CHECK(RespOpFor(op).op == op);
    CHECK_MESSAGE(Known(ops, RespOpName(op)), RespOpName(op));
  }
  CHECK(RespOpFor(RespOp::kIncr).permission == Permission::kIds);
}

TEST_CASE("every status label wire_errors gives is a series Metrics creates") {
  const auto& statuses = Metrics::Statuses();
  for (size_t c = 0; c <= static_cast<size_t>(ErrorCode::kInternal); ++c) {
    const WireErrorRow& row = WireErrorFor(static_cast<ErrorCode>(c));
    CHECK_MESSAGE(Known(statuses, row.metric_label), row.metric_label);
    CHECK(row.metric_label == ErrorCodeName(row.code));
    CHECK(MetricLabelFor(row.binary) == row.metric_label);
  }
  for (size_t e = 0; e <= static_cast<size_t>(ProtocolError::kTooMuchUnread); ++e) {
    const ProtocolErrorRow& row = ProtocolErrorFor(static_cast<ProtocolError>(e));
    CHECK_MESSAGE(Known(statuses, row.metric_label), row.metric_label);
  }
  for (uint16_t s = 0; s < 80; ++s) {
    CHECK(Known(statuses, MetricLabelFor(static_cast<proto::Status>(s))));
  }
  for (unsigned h = 100; h < 600; ++h) CHECK(Known(statuses, MetricLabelForHttp(h)));
  CHECK(MetricLabelFor(proto::Status::kUnknownOpcode) == "unknown_opcode");
  CHECK(MetricLabelForHttp(405) == "method_not_allowed");
  CHECK(MetricLabelForHttp(404) == "not_found");
  CHECK(MetricLabelForHttp(200) == "ok");
}

}  // namespace
}  // namespace seqd
