// The message-store ops of the seqd binary protocol (docs/protocol.md,
// "Message store ops" and "Push"): request and result payloads, and the
// server-initiated PUSH frames. Pure functions, no I/O, no Asio; shared by
// the server and the client library.
//
// Every decoded value holds string_views into the decoder's input: valid
// only as long as that buffer is. Decoders return nullopt for any payload
// that is not exactly the encoding (short, bytes left over, a count the
// bytes cannot hold, a bad enum value); they never allocate more than the
// input can back.
//
// Thread safety: all functions are reentrant; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/binary_codec.h"

namespace seqd::proto {

// Set (with kFlagResponse) on frames the server sends without a request.
inline constexpr uint16_t kFlagPush = 0x0002;

inline constexpr Opcode kOpSend = static_cast<Opcode>(0x20);
inline constexpr Opcode kOpPullRange = static_cast<Opcode>(0x21);
inline constexpr Opcode kOpPullSeqs = static_cast<Opcode>(0x22);
inline constexpr Opcode kOpMaxSeqs = static_cast<Opcode>(0x23);
inline constexpr Opcode kOpSyncUser = static_cast<Opcode>(0x24);
inline constexpr Opcode kOpMarkRead = static_cast<Opcode>(0x25);
inline constexpr Opcode kOpSetMember = static_cast<Opcode>(0x26);
inline constexpr Opcode kOpGetMember = static_cast<Opcode>(0x27);
inline constexpr Opcode kOpSetStatus = static_cast<Opcode>(0x28);
inline constexpr Opcode kOpSetConvMinSeq = static_cast<Opcode>(0x29);
inline constexpr Opcode kOpSubscribe = static_cast<Opcode>(0x2A);
inline constexpr Opcode kOpUnsubscribe = static_cast<Opcode>(0x2B);
inline constexpr Opcode kOpPushMessage = static_cast<Opcode>(0x2C);  // server to client only
inline constexpr Opcode kOpPushDropped = static_cast<Opcode>(0x2D);  // server to client only

// Lists longer than this are TOO_LARGE (the server checks; decoders accept
// any count the bytes hold).
inline constexpr size_t kMaxWireList = 1000;
inline constexpr uint32_t kMaxWirePullLimit = 1000;

// True for 0x20..0x2D.
bool IsMessageOpcode(uint8_t opcode);
// "SEND", "PULL_RANGE", ...; "" for other opcodes.
std::string_view MessageOpName(uint8_t opcode);

// Like DecodeFrame, but also accepts flags RESPONSE|PUSH: what a client
// decodes. (DecodeFrame, used by the server on requests, rejects PUSH.)
DecodeResult DecodeServerFrame(std::string_view input, size_t max_frame_size = kMaxFrameSize);
inline bool IsPush(const FrameView& f) { return (f.flags & kFlagPush) != 0; }

// --- values ------------------------------------------------------------------

struct MessageView {
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  std::string_view sender_id;
  std::string_view client_msg_id;
  int32_t content_type = 0;
  uint8_t status = 0;  // 0 normal, 1 recalled, 2 deleted
  int64_t send_time_ms = 0;
  std::string_view payload;
  bool operator==(const MessageView&) const = default;
};
// Bytes MessageView takes on the wire.
size_t EncodedSize(const MessageView& m);

struct MemberWire {
  int64_t min_seq = 1;
  std::optional<int64_t> max_seq;
  int64_t read_seq = 0;
  bool operator==(const MemberWire&) const = default;
};

struct ConvSyncWire {
  std::string_view conv_id;
  int64_t max_seq = 0;
  int64_t min_seq = 1;
  int64_t read_seq = 0;
  int64_t unread = 0;
  bool member = false;
  bool operator==(const ConvSyncWire&) const = default;
};

// --- requests (each names its opcode) ------------------------------------------

struct SendReq {
  static constexpr Opcode kOpcode = kOpSend;
  std::string_view conv_id, sender_id, client_msg_id;
  int32_t content_type = 0;
  std::string_view payload;
  bool operator==(const SendReq&) const = default;
};
struct PullRangeReq {
  static constexpr Opcode kOpcode = kOpPullRange;
  std::string_view conv_id;
  int64_t from_seq = 1;
  int64_t to_seq = 0;  // 0: up to the max
  uint32_t limit = 100;
  bool descending = false;
  std::string_view user_id;  // empty: none
  bool operator==(const PullRangeReq&) const = default;
};
struct PullSeqsReq {
  static constexpr Opcode kOpcode = kOpPullSeqs;
  std::string_view conv_id;
  std::string_view user_id;  // empty: none
  std::vector<int64_t> seqs;
  bool operator==(const PullSeqsReq&) const = default;
};
struct MaxSeqsReq {
  static constexpr Opcode kOpcode = kOpMaxSeqs;
  std::vector<std::string_view> conv_ids;
  bool operator==(const MaxSeqsReq&) const = default;
};
struct SyncUserReq {
  static constexpr Opcode kOpcode = kOpSyncUser;
  std::string_view user_id;
  std::vector<std::string_view> conv_ids;
  bool operator==(const SyncUserReq&) const = default;
};
struct MarkReadReq {
  static constexpr Opcode kOpcode = kOpMarkRead;
  std::string_view conv_id, user_id;
  int64_t read_seq = 0;
  bool operator==(const MarkReadReq&) const = default;
};
struct SetMemberReq {
  static constexpr Opcode kOpcode = kOpSetMember;
  std::string_view conv_id, user_id;
  std::optional<int64_t> min_seq;
  std::optional<int64_t> max_seq;
  bool clear_max = false;
  bool operator==(const SetMemberReq&) const = default;
};
struct GetMemberReq {
  static constexpr Opcode kOpcode = kOpGetMember;
  std::string_view conv_id, user_id;
  bool operator==(const GetMemberReq&) const = default;
};
struct SetStatusReq {
  static constexpr Opcode kOpcode = kOpSetStatus;
  std::string_view conv_id;
  int64_t seq = 0;
  uint8_t status = 1;  // 1 recalled, 2 deleted
  bool operator==(const SetStatusReq&) const = default;
};
struct SetConvMinSeqReq {
  static constexpr Opcode kOpcode = kOpSetConvMinSeq;
  std::string_view conv_id;
  int64_t min_seq = 1;
  bool operator==(const SetConvMinSeqReq&) const = default;
};
struct SubscribeReq {
  static constexpr Opcode kOpcode = kOpSubscribe;
  std::vector<std::string_view> conv_ids;
  bool operator==(const SubscribeReq&) const = default;
};
struct UnsubscribeReq {
  static constexpr Opcode kOpcode = kOpUnsubscribe;
  std::vector<std::string_view> conv_ids;
  bool operator==(const UnsubscribeReq&) const = default;
};

// --- results (the bytes after the OK status) ---------------------------------

struct SendRes {
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  int64_t send_time_ms = 0;
  bool duplicate = false;
  bool operator==(const SendRes&) const = default;
};
struct PullRangeRes {
  bool is_end = true;
  std::vector<MessageView> messages;
  bool operator==(const PullRangeRes&) const = default;
};
struct PullSeqsRes {
  std::vector<MessageView> messages;
  bool operator==(const PullSeqsRes&) const = default;
};
struct MaxSeqsRes {
  std::vector<int64_t> max_seqs;
  bool operator==(const MaxSeqsRes&) const = default;
};
struct SyncUserRes {
  std::vector<ConvSyncWire> convs;
  bool operator==(const SyncUserRes&) const = default;
};
struct MemberRes {  // MARK_READ, SET_MEMBER, GET_MEMBER
  MemberWire member;
  bool operator==(const MemberRes&) const = default;
};
struct MessageRes {  // SET_STATUS
  MessageView message;
  bool operator==(const MessageRes&) const = default;
};
struct MinSeqRes {  // SET_CONV_MIN_SEQ
  int64_t min_seq = 0;
  bool operator==(const MinSeqRes&) const = default;
};
struct EmptyRes {  // SUBSCRIBE, UNSUBSCRIBE
  bool operator==(const EmptyRes&) const = default;
};

// PUSH_MESSAGE body (after the OK status).
struct PushMessage {
  std::string_view conv_id;
  MessageView message;
  bool operator==(const PushMessage&) const = default;
};

// --- encoding and decoding ---------------------------------------------------
//
// T is any request, result or PushMessage type above (explicitly
// instantiated in message_codec.cc).

// Appends T's encoding (a request payload, or a result without the status).
template <typename T>
void EncodeBody(std::string& out, const T& value);
// Decodes exactly `bytes` as T; nullopt if malformed.
template <typename T>
std::optional<T> DecodeBody(std::string_view bytes);

// Appends a whole request frame (opcode T::kOpcode, flags 0).
template <typename T>
void AppendRequest(std::string& out, uint32_t request_id, const T& request);
// Appends a whole OK response frame: status 0, then the result.
template <typename T>
void AppendOkResult(std::string& out, Opcode opcode, uint32_t request_id, const T& result);
// Appends a PUSH_MESSAGE frame (request id 0, flags RESPONSE|PUSH).
void AppendPushMessage(std::string& out, const PushMessage& push);
// Appends a PUSH_DROPPED frame with `status` and `message`.
void AppendPushDropped(std::string& out, Status status, std::string_view message);

}  // namespace seqd::proto
