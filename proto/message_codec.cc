// The encoders and decoders of every message op, one short function pair
// per wire type, in the order of docs/protocol.md.
#include "proto/message_codec.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "proto/wire_io.h"

namespace seqd::proto {

namespace {

// --- writer ------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void U8(uint8_t v) { wire::Put8(out_, v); }
  void U16(uint16_t v) { wire::Put16(out_, v); }
  void U32(uint32_t v) { wire::Put32(out_, v); }
  void I32(int32_t v) { wire::Put32(out_, static_cast<uint32_t>(v)); }
  void I64(int64_t v) { wire::Put64(out_, v); }
  void Str(std::string_view s) { wire::PutStr16(out_, s); }
  void Bytes(std::string_view s) { wire::PutBytes32(out_, s); }
  void Count(size_t n) { wire::Put32(out_, static_cast<uint32_t>(n)); }

 private:
  std::string& out_;
};

using wire::Reader;

constexpr size_t kMinMessage = 8 + 8 + 2 + 2 + 4 + 1 + 8 + 4;
constexpr size_t kMinConvSync = 2 + 8 * 4 + 1;

// --- per-type encoders and decoders ---------------------------------------------

void Put(Writer& w, const MessageView& m) {
  w.I64(m.seq);
  w.I64(m.server_msg_id);
  w.Str(m.sender_id);
  w.Str(m.client_msg_id);
  w.I32(m.content_type);
  w.U8(m.status);
  w.I64(m.send_time_ms);
  w.Bytes(m.payload);
}
void Get(Reader& r, MessageView& m) {
  m.seq = r.I64();
  m.server_msg_id = r.I64();
  m.sender_id = r.Str();
  m.client_msg_id = r.Str();
  m.content_type = r.I32();
  m.status = r.U8();
  m.send_time_ms = r.I64();
  m.payload = r.Bytes();
  if (m.status > 2) r.Fail();
}

void Put(Writer& w, const MemberWire& m) {
  w.I64(m.min_seq);
  w.U8(m.max_seq ? 1 : 0);
  w.I64(m.max_seq.value_or(0));
  w.I64(m.read_seq);
}
void Get(Reader& r, MemberWire& m) {
  m.min_seq = r.I64();
  const uint8_t has_max = r.U8();
  const int64_t max = r.I64();
  m.read_seq = r.I64();
  if (has_max > 1 || (!has_max && max != 0)) return r.Fail();
  if (has_max) m.max_seq = max;
}

void PutConvs(Writer& w, const std::vector<std::string_view>& convs) {
  w.Count(convs.size());
  for (std::string_view c : convs) w.Str(c);
}
void GetConvs(Reader& r, std::vector<std::string_view>& convs) {
  const size_t n = r.Count(2);
  convs.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) convs.push_back(r.Str());
}

void PutMessages(Writer& w, const std::vector<MessageView>& ms) {
  w.Count(ms.size());
  for (const MessageView& m : ms) Put(w, m);
}
void GetMessages(Reader& r, std::vector<MessageView>& ms) {
  const size_t n = r.Count(kMinMessage);
  ms.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) Get(r, ms.emplace_back());
}

// Requests.
void Put(Writer& w, const SendReq& q) {
  w.Str(q.conv_id);
  w.Str(q.sender_id);
  w.Str(q.client_msg_id);
  w.I32(q.content_type);
  w.Bytes(q.payload);
}
void Get(Reader& r, SendReq& q) {
  q.conv_id = r.Str();
  q.sender_id = r.Str();
  q.client_msg_id = r.Str();
  q.content_type = r.I32();
  q.payload = r.Bytes();
}

void Put(Writer& w, const PullRangeReq& q) {
  w.Str(q.conv_id);
  w.I64(q.from_seq);
  w.I64(q.to_seq);
  w.U32(q.limit);
  w.U8(q.descending ? 1 : 0);
  w.Str(q.user_id);
}
void Get(Reader& r, PullRangeReq& q) {
  q.conv_id = r.Str();
  q.from_seq = r.I64();
  q.to_seq = r.I64();
  q.limit = r.U32();
  const uint8_t order = r.U8();
  q.user_id = r.Str();
  if (order > 1) r.Fail();
  q.descending = order == 1;
}

void Put(Writer& w, const PullSeqsReq& q) {
  w.Str(q.conv_id);
  w.Str(q.user_id);
  w.Count(q.seqs.size());
  for (int64_t s : q.seqs) w.I64(s);
}
void Get(Reader& r, PullSeqsReq& q) {
  q.conv_id = r.Str();
  q.user_id = r.Str();
  const size_t n = r.Count(8);
  q.seqs.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) q.seqs.push_back(r.I64());
}

void Put(Writer& w, const MaxSeqsReq& q) { PutConvs(w, q.conv_ids); }
void Get(Reader& r, MaxSeqsReq& q) { GetConvs(r, q.conv_ids); }

void Put(Writer& w, const SyncUserReq& q) {
  w.Str(q.user_id);
  PutConvs(w, q.conv_ids);
}
void Get(Reader& r, SyncUserReq& q) {
  q.user_id = r.Str();
  GetConvs(r, q.conv_ids);
}

void Put(Writer& w, const MarkReadReq& q) {
  w.Str(q.conv_id);
  w.Str(q.user_id);
  w.I64(q.read_seq);
}
void Get(Reader& r, MarkReadReq& q) {
  q.conv_id = r.Str();
  q.user_id = r.Str();
  q.read_seq = r.I64();
}

void Put(Writer& w, const SetMemberReq& q) {
  w.Str(q.conv_id);
  w.Str(q.user_id);
  w.U8((q.min_seq ? 1 : 0) | (q.max_seq ? 2 : 0) | (q.clear_max ? 4 : 0));
  w.I64(q.min_seq.value_or(0));
  w.I64(q.max_seq.value_or(0));
}
void Get(Reader& r, SetMemberReq& q) {
  q.conv_id = r.Str();
  q.user_id = r.Str();
  const uint8_t flags = r.U8();
  const int64_t min = r.I64();
  const int64_t max = r.I64();
  if (flags & ~7) return r.Fail();
  if (!(flags & 1) && min != 0) return r.Fail();
  if (!(flags & 2) && max != 0) return r.Fail();
  if (flags & 1) q.min_seq = min;
  if (flags & 2) q.max_seq = max;
  q.clear_max = (flags & 4) != 0;
}

void Put(Writer& w, const GetMemberReq& q) {
  w.Str(q.conv_id);
  w.Str(q.user_id);
}
void Get(Reader& r, GetMemberReq& q) {
  q.conv_id = r.Str();
  q.user_id = r.Str();
}

void Put(Writer& w, const SetStatusReq& q) {
  w.Str(q.conv_id);
  w.I64(q.seq);
  w.U8(q.status);
}
void Get(Reader& r, SetStatusReq& q) {
  q.conv_id = r.Str();
  q.seq = r.I64();
  q.status = r.U8();
  if (q.status < 1 || q.status > 2) r.Fail();
}

void Put(Writer& w, const SetConvMinSeqReq& q) {
  w.Str(q.conv_id);
  w.I64(q.min_seq);
}
void Get(Reader& r, SetConvMinSeqReq& q) {
  q.conv_id = r.Str();
  q.min_seq = r.I64();
}

void Put(Writer& w, const SubscribeReq& q) { PutConvs(w, q.conv_ids); }
void Get(Reader& r, SubscribeReq& q) { GetConvs(r, q.conv_ids); }
void Put(Writer& w, const UnsubscribeReq& q) { PutConvs(w, q.conv_ids); }
void Get(Reader& r, UnsubscribeReq& q) { GetConvs(r, q.conv_ids); }

// Results.
void Put(Writer& w, const SendRes& s) {
  w.I64(s.seq);
  w.I64(s.server_msg_id);
  w.I64(s.send_time_ms);
  w.U8(s.duplicate ? 1 : 0);
}
void Get(Reader& r, SendRes& s) {
  s.seq = r.I64();
  s.server_msg_id = r.I64();
  s.send_time_ms = r.I64();
  const uint8_t dup = r.U8();
  if (dup > 1) r.Fail();
  s.duplicate = dup == 1;
}

void Put(Writer& w, const PullRangeRes& s) {
  w.U8(s.is_end ? 1 : 0);
  PutMessages(w, s.messages);
}
void Get(Reader& r, PullRangeRes& s) {
  const uint8_t end = r.U8();
  if (end > 1) r.Fail();
  s.is_end = end == 1;
  GetMessages(r, s.messages);
}

void Put(Writer& w, const PullSeqsRes& s) { PutMessages(w, s.messages); }
void Get(Reader& r, PullSeqsRes& s) { GetMessages(r, s.messages); }

void Put(Writer& w, const MaxSeqsRes& s) {
  w.Count(s.max_seqs.size());
  for (int64_t v : s.max_seqs) w.I64(v);
}
void Get(Reader& r, MaxSeqsRes& s) {
  const size_t n = r.Count(8);
  s.max_seqs.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) s.max_seqs.push_back(r.I64());
}

void Put(Writer& w, const SyncUserRes& s) {
  w.Count(s.convs.size());
  for (const ConvSyncWire& c : s.convs) {
    w.Str(c.conv_id);
    w.I64(c.max_seq);
    w.I64(c.min_seq);
    w.I64(c.read_seq);
    w.I64(c.unread);
    w.U8(c.member ? 1 : 0);
  }
}
void Get(Reader& r, SyncUserRes& s) {
  const size_t n = r.Count(kMinConvSync);
  s.convs.reserve(n);
  for (size_t i = 0; i < n && r.ok(); ++i) {
    ConvSyncWire& c = s.convs.emplace_back();
    c.conv_id = r.Str();
    c.max_seq = r.I64();
    c.min_seq = r.I64();
    c.read_seq = r.I64();
    c.unread = r.I64();
    const uint8_t member = r.U8();
    if (member > 1) r.Fail();
    c.member = member == 1;
  }
}

void Put(Writer& w, const MemberRes& s) { Put(w, s.member); }
void Get(Reader& r, MemberRes& s) { Get(r, s.member); }
void Put(Writer& w, const MessageRes& s) { Put(w, s.message); }
void Get(Reader& r, MessageRes& s) { Get(r, s.message); }
void Put(Writer& w, const MinSeqRes& s) { w.I64(s.min_seq); }
void Get(Reader& r, MinSeqRes& s) { s.min_seq = r.I64(); }
void Put(Writer&, const EmptyRes&) {}
void Get(Reader&, EmptyRes&) {}

void Put(Writer& w, const PushMessage& p) {
  w.Str(p.conv_id);
  Put(w, p.message);
}
void Get(Reader& r, PushMessage& p) {
  p.conv_id = r.Str();
  Get(r, p.message);
}

// Writes a frame header with a placeholder length; returns where the frame
// starts, for PatchLength.
size_t BeginFrame(std::string& out, Opcode opcode, uint16_t flags, uint32_t request_id) {
  const size_t start = out.size();
  Writer w(out);
  w.U32(0);
  w.U8(kVersion);
  w.U8(static_cast<uint8_t>(opcode));
  w.U16(flags);
  w.U32(request_id);
  return start;
}

void PatchLength(std::string& out, size_t start) {
  const auto length = static_cast<uint32_t>(out.size() - start - 4);
  out[start] = static_cast<char>(length >> 24);
  out[start + 1] = static_cast<char>(length >> 16);
  out[start + 2] = static_cast<char>(length >> 8);
  out[start + 3] = static_cast<char>(length);
}

inline uint16_t Load16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((u[0] << 8) | u[1]);
}

}  // namespace

bool IsMessageOpcode(uint8_t opcode) {
  return opcode >= static_cast<uint8_t>(kOpSend) && opcode <= static_cast<uint8_t>(kOpPushDropped);
}

std::string_view MessageOpName(uint8_t opcode) {
  static constexpr std::string_view kNames[] = {
      "SEND",      "PULL_RANGE",  "PULL_SEQS",    "MAX_SEQS",    "SYNC_USER",
      "MARK_READ", "SET_MEMBER",  "GET_MEMBER",   "SET_STATUS",  "SET_CONV_MIN_SEQ",
      "SUBSCRIBE", "UNSUBSCRIBE", "PUSH_MESSAGE", "PUSH_DROPPED"};
  if (!IsMessageOpcode(opcode)) return {};
  return kNames[opcode - static_cast<uint8_t>(kOpSend)];
}

DecodeResult DecodeServerFrame(std::string_view input, size_t max_frame_size) {
  constexpr uint16_t kPushFlags = kFlagResponse | kFlagPush;
  if (input.size() < 8 || Load16(input.data() + 6) != kPushFlags) {
    return DecodeFrame(input, max_frame_size);
  }
  // Decode a copy of the header with the PUSH bit cleared, then point the
  // payload back into `input`.
  char header[kHeaderSize];
  const size_t have = std::min(input.size(), kHeaderSize);
  std::memcpy(header, input.data(), have);
  header[7] = static_cast<char>(kFlagResponse);
  std::string_view copy(header, have);
  DecodeResult r = DecodeFrame(copy, max_frame_size);
  if (r.state == DecodeState::kError) return r;
  const size_t total = 4 + ((size_t{static_cast<unsigned char>(input[0])} << 24) |
                            (size_t{static_cast<unsigned char>(input[1])} << 16) |
                            (size_t{static_cast<unsigned char>(input[2])} << 8) |
                            size_t{static_cast<unsigned char>(input[3])});
  if (input.size() < total) return DecodeResult{};  // kNeedMore
  r.state = DecodeState::kFrame;
  r.consumed = total;
  r.frame.version = kVersion;
  r.frame.opcode = static_cast<uint8_t>(input[5]);
  r.frame.flags = kPushFlags;
  r.frame.request_id = (uint32_t{Load16(input.data() + 8)} << 16) | Load16(input.data() + 10);
  r.frame.payload = input.substr(kHeaderSize, total - kHeaderSize);
  return r;
}

size_t EncodedSize(const MessageView& m) {
  return kMinMessage + m.sender_id.size() + m.client_msg_id.size() + m.payload.size();
}

template <typename T>
void EncodeBody(std::string& out, const T& value) {
  Writer w(out);
  Put(w, value);
}

template <typename T>
std::optional<T> DecodeBody(std::string_view bytes) {
  Reader r(bytes);
  T value;
  Get(r, value);
  if (!r.done()) return std::nullopt;
  return value;
}

template <typename T>
void AppendRequest(std::string& out, uint32_t request_id, const T& request) {
  const size_t start = BeginFrame(out, T::kOpcode, 0, request_id);
  EncodeBody(out, request);
  PatchLength(out, start);
}

template <typename T>
void AppendOkResult(std::string& out, Opcode opcode, uint32_t request_id, const T& result) {
  const size_t start = BeginFrame(out, opcode, kFlagResponse, request_id);
  Writer(out).U16(static_cast<uint16_t>(Status::kOk));
  EncodeBody(out, result);
  PatchLength(out, start);
}

void AppendPushMessage(std::string& out, const PushMessage& push) {
  const size_t start = BeginFrame(out, kOpPushMessage, kFlagResponse | kFlagPush, 0);
  Writer(out).U16(static_cast<uint16_t>(Status::kOk));
  EncodeBody(out, push);
  PatchLength(out, start);
}

void AppendPushDropped(std::string& out, Status status, std::string_view message) {
  // The error shape of AppendError, with the PUSH flag.
  const size_t start = out.size();
  AppendError(out, kOpPushDropped, 0, status, message);
  out[start + 7] = static_cast<char>(kFlagResponse | kFlagPush);
}

#define SEQD_MESSAGE_CODEC_BODY(T)                     \
  template void EncodeBody<T>(std::string&, const T&); \
  template std::optional<T> DecodeBody<T>(std::string_view);
#define SEQD_MESSAGE_CODEC_REQUEST(T) \
  SEQD_MESSAGE_CODEC_BODY(T)          \
  template void AppendRequest<T>(std::string&, uint32_t, const T&);
#define SEQD_MESSAGE_CODEC_RESULT(T) \
  SEQD_MESSAGE_CODEC_BODY(T)         \
  template void AppendOkResult<T>(std::string&, Opcode, uint32_t, const T&);

SEQD_MESSAGE_CODEC_REQUEST(SendReq)
SEQD_MESSAGE_CODEC_REQUEST(PullRangeReq)
SEQD_MESSAGE_CODEC_REQUEST(PullSeqsReq)
SEQD_MESSAGE_CODEC_REQUEST(MaxSeqsReq)
SEQD_MESSAGE_CODEC_REQUEST(SyncUserReq)
SEQD_MESSAGE_CODEC_REQUEST(MarkReadReq)
SEQD_MESSAGE_CODEC_REQUEST(SetMemberReq)
SEQD_MESSAGE_CODEC_REQUEST(GetMemberReq)
SEQD_MESSAGE_CODEC_REQUEST(SetStatusReq)
SEQD_MESSAGE_CODEC_REQUEST(SetConvMinSeqReq)
SEQD_MESSAGE_CODEC_REQUEST(SubscribeReq)
SEQD_MESSAGE_CODEC_REQUEST(UnsubscribeReq)
SEQD_MESSAGE_CODEC_RESULT(SendRes)
SEQD_MESSAGE_CODEC_RESULT(PullRangeRes)
SEQD_MESSAGE_CODEC_RESULT(PullSeqsRes)
SEQD_MESSAGE_CODEC_RESULT(MaxSeqsRes)
SEQD_MESSAGE_CODEC_RESULT(SyncUserRes)
SEQD_MESSAGE_CODEC_RESULT(MemberRes)
SEQD_MESSAGE_CODEC_RESULT(MessageRes)
SEQD_MESSAGE_CODEC_RESULT(MinSeqRes)
SEQD_MESSAGE_CODEC_RESULT(EmptyRes)
SEQD_MESSAGE_CODEC_BODY(PushMessage)

}  // namespace seqd::proto
