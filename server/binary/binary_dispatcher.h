// The binary protocol's request handling (docs/protocol.md), without
// sockets: a decoded request frame in, a Services call, the answer frame out
// through a BinaryConnection. BinaryServer's session feeds it frames;
// tests feed it frames and read what a string-backed connection got.
//
// Tokens (docs/security.md): with a tokens file, only PING and AUTH are
// answered until an AUTH succeeds (UNAUTHENTICATED otherwise); each op then
// needs its scope (PERMISSION_DENIED); 3 failed AUTHs close the connection.
// Ops: PING; AUTH; NEXT_IDS (services.ids); the message store ops 0x20-0x2B and
// SUBSCRIBE/UNSUBSCRIBE (services.messages, binary_message_ops.cc); the
// snowflake ops 0x10-0x11 (services.snowflake; UNKNOWN_OPCODE while it is
// not enabled); in cluster mode CLUSTER_MAP and CLUSTER_NUDGE
// (services.cluster); PLACEMENT (services.placement; version 0 without
// store groups). Anything else: UNKNOWN_OPCODE. Errors map through
// server/service/wire_errors.h; every answer is counted in
// services.metrics and logged (warn for STORE_UNAVAILABLE and INTERNAL).
//
// NEXT_IDS requests of one key that follow each other in one read are
// served as a run: one take for all (server/binary/next_ids_runs.h).
//
// Thread safety: Handle(), EndOfBatch(), WriteIds() and WriteRun() run on
// the connection's strand; one dispatcher serves any number of connections
// at once (it holds no per-connection state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "proto/binary_codec.h"
#include "server/service/services.h"
#include "server/binary/binary_connection.h"

namespace seqd {

struct BinaryDispatchLimits {
  size_t max_frame_bytes = proto::kMaxFrameSize;  // answers never exceed it
  size_t max_subscriptions = 10000;               // per connection
};

class BinaryDispatcher {
 public:
  // The objects `services` refers to must outlive the dispatcher.
  BinaryDispatcher(const Services& services, BinaryDispatchLimits limits);

  // Handles one request frame (REQUIRES: not a response frame). Answers at
  // once or later, always exactly once.
  void Handle(const proto::FrameView& f, BinaryConnection& c);

  // The end of the frames handed over in one batch (c.batching()): takes
  // the run of NEXT_IDS requests still gathered, if any.
  void EndOfBatch(BinaryConnection& c);

  // Writes the NEXT_IDS answer to `c` (called back by DeliverIds).
  void WriteIds(BinaryConnection& c, uint32_t request_id, const Result<IdBatch>& result);
  // Writes the answers of a run's requests, each its share of `result` in
  // the order they came, and frees the run (called back by DeliverRun).
  void WriteRun(BinaryConnection& c, uint32_t run, const Result<IdBatch>& result);

  // Checks `c`'s subscriptions against its token as now loaded (after a
  // tokens reload, or an AUTH that changed the token): if the token is gone
  // or no longer allows one of them, drops them all and queues a
  // PUSH_DROPPED (UNAUTHENTICATED or PERMISSION_DENIED) on `c`. On c's
  // strand; the caller flushes.
  void RecheckSubscriptions(BinaryConnection& c);

  // Counts a protocol error (the connection closes after its error frame).
  void CountProtocolError(proto::Status status);

  // Failed AUTHs after which a connection is closed.
  static constexpr int kMaxFailedAuths = 3;

 private:
  void HandleAuth(const proto::FrameView& f, BinaryConnection& c);
  // True if the connection's token may do the frame's op (its permission in
  // the op table, server/binary/binary_ops.h) on `key`; else answers
  // UNAUTHENTICATED or PERMISSION_DENIED and returns false.
  bool Permit(const proto::FrameView& f, BinaryConnection& c, std::string_view key = {});
  // The same for a permission the op needs beyond its row's (a peer's
  // forwarded request: cluster).
  bool PermitAs(const proto::FrameView& f, BinaryConnection& c, Permission p,
                std::string_view key = {});
  // NEXT_IDS (binary_next_ids.cc): taken alone, or gathered into c.runs().
  void HandleNextIds(const proto::FrameView& f, BinaryConnection& c);
  // Takes the open run's IDs in one allocator call. REQUIRES: c.runs().open().
  void TakeRun(BinaryConnection& c);
  // NEXT_BLOCK, NEXT_BLOCK_ONCE, MAX_IDS, GET_MIN_SEQS, SET_MIN_SEQS
  // (binary_id_ops.cc).
  void HandleIdOp(const proto::FrameView& f, BinaryConnection& c);
  // USER_SEQS and SET_USER_SEQS (binary_user_seq_ops.cc).
  void HandleUserSeqOp(const proto::FrameView& f, BinaryConnection& c);
  // NEXT_BLOCK (empty `token`) and NEXT_BLOCK_ONCE once parsed: the scopes
  // checked, then the router's TakeBlock, answered in `f`'s opcode.
  void TakeBlock(const proto::FrameView& f, BinaryConnection& c, std::string_view key,
                 uint32_t count, std::string_view on_behalf_of, std::string_view token);
  void HandleSnowflakeOp(const proto::FrameView& f, BinaryConnection& c);
  void HandleClusterMap(const proto::FrameView& f, BinaryConnection& c);
  // PLACEMENT: the connection asks for placement pushes; a peer's version
  // is heard; ours is answered.
  void HandlePlacement(const proto::FrameView& f, BinaryConnection& c);
  void HandleMessageOp(const proto::FrameView& f, BinaryConnection& c);  // binary_message_ops.cc
  void HandleSubscribe(const proto::FrameView& f, BinaryConnection& c);  // binary_message_ops.cc
  void HandleUnsubscribe(const proto::FrameView& f, BinaryConnection& c);
  // True if a SUBSCRIBE or UNSUBSCRIBE names at most kMaxWireList
  // conversations (`n`); else answers TOO_LARGE and returns false.
  bool ConvListFits(const proto::FrameView& f, BinaryConnection& c, size_t n);
  // Counts and queues the empty OK answer of `f`.
  void AnswerOkEmpty(const proto::FrameView& f, BinaryConnection& c);

  // Metrics and the log line of one answer.
  void Count(uint8_t opcode, uint32_t id, proto::Status status);
  // Appends an error answer and queues it.
  void AnswerError(BinaryConnection& c, proto::Opcode op, uint32_t id, proto::Status status,
                   std::string_view message);
  // Appends the answer to a Result: `encode(out, id, value)` if ok, else its
  // error (SHUTTING_DOWN also closes the connection after it).
  template <typename T, typename Encode>
  void WriteResult(BinaryConnection& c, proto::Opcode op, uint32_t id, const Result<T>& r,
                   Encode& encode);
  // A callback for a service call answered later: holds the connection and
  // delivers the encoded answer on its strand.
  template <typename T, typename Encode>
  std::function<void(Result<T>)> Later(BinaryConnection& c, proto::Opcode op, uint32_t id,
                                       Encode encode);
  // The request body of message op `Req`, or INVALID_ARGUMENT answered.
  template <typename Req>
  std::optional<Req> Decode(const proto::FrameView& f, BinaryConnection& c);
  // Decode(), then Permit() on the request's conversation (conv_id), or on
  // each of its conversations (conv_ids); nullopt once either answered
  // (binary_message_ops.cc).
  template <typename Req>
  std::optional<Req> DecodePermitted(const proto::FrameView& f, BinaryConnection& c);

  const Services services_;
  const BinaryDispatchLimits limits_;
};

}  // namespace seqd
