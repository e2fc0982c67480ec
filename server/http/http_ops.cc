#include "server/http/http_ops.h"

#include <array>

namespace seqd {
namespace {

constexpr std::array<HttpOpRow, 25> kRows = {{
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
    {HttpOp::kLeafCache, "leaf_monitor", Permission::kAdmin},
    {HttpOp::kLeafDb, "leaf_monitor", Permission::kAdmin},
    {HttpOp::kMsgEvents, "msg_events", Permission::kMsgRead},
    {HttpOp::kMaxIds, "max_ids", Permission::kIds},
    {HttpOp::kMinSeqs, "min_seqs", Permission::kIds},
    {HttpOp::kUserSeqs, "user_seqs", Permission::kIds},
    {HttpOp::kOther, "other", std::nullopt},
}};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kRows.size(); ++i) {
    if (static_cast<size_t>(kRows[i].op) != i) return false;
  }
  return static_cast<size_t>(HttpOp::kOther) + 1 == kRows.size();
}
static_assert(InEnumOrder(), "kRows: one row per HttpOp, in enum order");

// In docs/openapi.yaml's order.
constexpr std::array<HttpRoute, 42> kRoutes = {{
    {"GET", "/", HttpOp::kStatusPage},
    {"GET", "/seq/{key}", HttpOp::kSeq},
    {"GET", "/api/segment/get/{key}", HttpOp::kLeafSegment},
    {"GET", "/max_ids", HttpOp::kMaxIds},
    {"POST", "/max_ids", HttpOp::kMaxIds},
    {"GET", "/min_seqs", HttpOp::kMinSeqs},
    {"POST", "/min_seqs", HttpOp::kMinSeqs},
    {"PUT", "/min_seqs", HttpOp::kMinSeqs},
    {"GET", "/user_seqs", HttpOp::kUserSeqs},
    {"POST", "/user_seqs", HttpOp::kUserSeqs},
    {"PUT", "/user_seqs", HttpOp::kUserSeqs},
    {"GET", "/admin/keys", HttpOp::kAdmin},
    {"POST", "/admin/keys", HttpOp::kAdmin},
    {"GET", "/admin/keys/{key}", HttpOp::kAdmin},
    {"PUT", "/admin/keys/{key}/step", HttpOp::kAdmin},
    {"GET", "/admin/cache", HttpOp::kAdmin},
    {"GET", "/cache", HttpOp::kLeafCache},
    {"GET", "/db", HttpOp::kLeafDb},
    {"GET", "/admin/cluster", HttpOp::kAdmin},
    {"GET", "/admin/placement", HttpOp::kAdmin},
    {"POST", "/admin/placement/move", HttpOp::kAdmin},
    {"GET", "/admin/snowflake", HttpOp::kAdmin},
    {"GET", "/healthz", HttpOp::kHealth},
    {"GET", "/readyz", HttpOp::kHealth},
    {"GET", "/metrics", HttpOp::kMetrics},
    {"GET", "/snowflake", HttpOp::kSnowflake},
    {"GET", "/snowflake/decode/{id}", HttpOp::kSnowflakeDecode},
    {"GET", "/api/snowflake/get/{key}", HttpOp::kSnowflake},
    {"GET", "/decodeSnowflakeId", HttpOp::kSnowflakeDecode},
    {"POST", "/conversations/{conv}/messages", HttpOp::kMsgSend},
    {"GET", "/conversations/{conv}/messages", HttpOp::kMsgPull},
    {"GET", "/conversations/{conv}/messages/{seq}", HttpOp::kMsgPull},
    {"GET", "/conversations/{conv}/events", HttpOp::kMsgEvents},
    {"GET", "/events", HttpOp::kMsgEvents},
    {"DELETE", "/conversations/{conv}/messages/{seq}", HttpOp::kMsgDelete},
    {"POST", "/conversations/{conv}/messages/{seq}/recall", HttpOp::kMsgRecall},
    {"PUT", "/conversations/{conv}/min_seq", HttpOp::kMsgMinSeq},
    {"GET", "/conversations/{conv}/members/{user}", HttpOp::kMsgGetMember},
    {"PUT", "/conversations/{conv}/members/{user}", HttpOp::kMsgSetMember},
    {"PUT", "/conversations/{conv}/members/{user}/read_seq", HttpOp::kMsgMarkRead},
    {"POST", "/conversations/max_seqs", HttpOp::kMsgMaxSeqs},
    {"POST", "/users/{user}/sync", HttpOp::kMsgSyncUser},
}};

}  // namespace

const HttpOpRow& HttpOpFor(HttpOp op) { return kRows[static_cast<size_t>(op)]; }

std::span<const HttpRoute> HttpRoutes() { return kRoutes; }

}  // namespace seqd
