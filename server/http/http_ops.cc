#include "server/http/http_ops.h"

#include <array>

namespace seqd {
namespace {

constexpr std::array<HttpOpRow, 20> kRows = {{
    {HttpOp::kStatusPage, "status", Permission::kAdmin},
    {HttpOp::kSeq, "seq", Permission::kIds},
    {HttpOp::kLeafSegment, "leaf_segment", Permission::kIds},
    {HttpOp::kAdmin, "admin", Permission::kAdmin},
    {HttpOp::kHealth, "health", std::nullopt},
    {HttpOp::kMetrics, "metrics", Permission::kMetrics},
    {HttpOp::kSnowflake, "snowflake", Permission::kSnowflake},
    {HttpOp::kSnowflakeDecode, "snowflake_decode", Permission::kSnowflake},
    {HttpOp::kMsgSend, "msg_send", Permission::kMsgSend},
    {HttpOp::kMsgPull, "msg_pull", Permission::kMsgRead},
    {HttpOp::kMsgDelete, "msg_status", Permission::kMsgAdmin},
    {HttpOp::kMsgRecall, "msg_status", Permission::kMsgAdmin},
    {HttpOp::kMsgMinSeq, "msg_status", Permission::kMsgAdmin},
    {HttpOp::kMsgMarkRead, "msg_member", Permission::kMsgRead},
    {HttpOp::kMsgGetMember, "msg_member", Permission::kMsgRead},
    {HttpOp::kMsgSetMember, "msg_member", Permission::kMsgAdmin},
    {HttpOp::kMsgMaxSeqs, "msg_batch", Permission::kMsgRead},
    {HttpOp::kMsgSyncUser, "msg_batch", Permission::kMsgRead},
    {HttpOp::kMsgEvents, "msg_events", Permission::kMsgRead},
    {HttpOp::kOther, "other", std::nullopt},
}};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kRows.size(); ++i) {
    if (static_cast<size_t>(kRows[i].op) != i) return false;
  }
  return static_cast<size_t>(HttpOp::kOther) + 1 == kRows.size();
}
static_assert(InEnumOrder(), "kRows: one row per HttpOp, in enum order");

}  // namespace

const HttpOpRow& HttpOpFor(HttpOp op) { return kRows[static_cast<size_t>(op)]; }

}  // namespace seqd
