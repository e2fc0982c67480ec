#include "server/binary/binary_ops.h"

#include <array>

#include "proto/binary_codec.h"
#include "proto/cluster_codec.h"
#include "proto/id_codec.h"
#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"

namespace seqd {
namespace {

// PUSH_MESSAGE and PUSH_DROPPED go from server to client only: they have no
// row, so a client sending one gets UNKNOWN_OPCODE.

constexpr uint8_t Op(proto::Opcode op) { return static_cast<uint8_t>(op); }

constexpr std::array<BinaryOpRow, 28> kRows = {{
    {Op(proto::Opcode::kPing), "PING", "ping", std::nullopt},
    {Op(proto::Opcode::kNextIds), "NEXT_IDS", "next_ids", Permission::kIds},
    {Op(proto::Opcode::kAuth), "AUTH", "auth", std::nullopt},
    {Op(proto::kOpNextBlock), "NEXT_BLOCK", "next_block", Permission::kIds},
    {Op(proto::kOpMaxIds), "MAX_IDS", "max_ids", Permission::kIds},
    {Op(proto::kOpGetMinSeqs), "GET_MIN_SEQS", "min_seqs", Permission::kIds},
    {Op(proto::kOpSetMinSeqs), "SET_MIN_SEQS", "min_seqs", Permission::kIds},
    {Op(proto::kOpNextBlockOnce), "NEXT_BLOCK_ONCE", "next_block", Permission::kIds},
    {Op(proto::kOpMaxIdsTimes), "MAX_IDS_TIMES", "max_ids", Permission::kIds},
    {Op(proto::kOpUserSeqs), "USER_SEQS", "user_seqs", Permission::kIds},
    {Op(proto::kOpSetUserSeqs), "SET_USER_SEQS", "user_seqs", Permission::kIds},
    {Op(proto::kOpSnowflake), "SNOWFLAKE", "snowflake", Permission::kSnowflake},
    {Op(proto::kOpSnowflakeDecode), "SNOWFLAKE_DECODE", "snowflake_decode", Permission::kSnowflake},
    {Op(proto::kOpSend), "SEND", "msg_send", Permission::kMsgSend},
    {Op(proto::kOpPullRange), "PULL_RANGE", "msg_pull", Permission::kMsgRead},
    {Op(proto::kOpPullSeqs), "PULL_SEQS", "msg_pull", Permission::kMsgRead},
    {Op(proto::kOpMaxSeqs), "MAX_SEQS", "msg_batch", Permission::kMsgRead},
    {Op(proto::kOpSyncUser), "SYNC_USER", "msg_batch", Permission::kMsgRead},
    {Op(proto::kOpMarkRead), "MARK_READ", "msg_member", Permission::kMsgRead},
    {Op(proto::kOpSetMember), "SET_MEMBER", "msg_member", Permission::kMsgAdmin},
    {Op(proto::kOpGetMember), "GET_MEMBER", "msg_member", Permission::kMsgRead},
    {Op(proto::kOpSetStatus), "SET_STATUS", "msg_status", Permission::kMsgAdmin},
    {Op(proto::kOpSetConvMinSeq), "SET_CONV_MIN_SEQ", "msg_status", Permission::kMsgAdmin},
    {Op(proto::kOpSubscribe), "SUBSCRIBE", "subscribe", Permission::kMsgRead},
    // Ends what the connection subscribed itself: nothing more to allow.
    {Op(proto::kOpUnsubscribe), "UNSUBSCRIBE", "subscribe", std::nullopt},
    // Any token: clients that route by themselves need the map.
    {Op(proto::kOpClusterMap), "CLUSTER_MAP", "cluster_map", std::nullopt},
    {Op(proto::kOpClusterNudge), "CLUSTER_NUDGE", "cluster_map", Permission::kCluster},
    // Any token: a client asks for the pushes with it. The version it
    // tells counts only from peers (the cluster scope): a newer one makes
    // this instance read the placement (binary_dispatcher.cc).
    {Op(proto::kOpPlacement), "PLACEMENT", "cluster_map", std::nullopt},
}};

constexpr bool InOpcodeOrder() {
  for (size_t i = 1; i < kRows.size(); ++i) {
    if (kRows[i - 1].opcode >= kRows[i].opcode) return false;
  }
  return true;
}
static_assert(InOpcodeOrder(), "kRows: one row per opcode, in opcode order");

}  // namespace

std::span<const BinaryOpRow> BinaryOps() { return kRows; }

const BinaryOpRow* BinaryOpFor(uint8_t opcode) {
  for (const BinaryOpRow& row : kRows) {
    if (row.opcode == opcode) return &row;
  }
  return nullptr;
}

std::string_view BinaryOpLabel(uint8_t opcode) {
  const BinaryOpRow* row = BinaryOpFor(opcode);
  return row ? row->metric_label : "protocol_error";
}

}  // namespace seqd
