#include "proto/binary_codec.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace seqd::proto {

namespace {

// --- big-endian helpers ----------------------------------------------------

inline uint16_t Load16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((u[0] << 8) | u[1]);
}

inline uint32_t Load32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

inline uint64_t Load64(const char* p) {
  return (uint64_t{Load32(p)} << 32) | uint64_t{Load32(p + 4)};
}

inline char* Store16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
  return p + 2;
}

inline char* Store32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
  return p + 4;
}

inline char* Store64(char* p, uint64_t v) {
  Store32(p, static_cast<uint32_t>(v >> 32));
  return Store32(p + 4, static_cast<uint32_t>(v));
}

inline char* StoreBytes(char* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// Grows `out` by `n` bytes and returns where they start.
inline char* Grow(std::string& out, size_t n) {
  const size_t old = out.size();
  out.resize(old + n);
  return out.data() + old;
}

// Writes the 12-byte header for a frame with `payload_size` payload bytes.
inline char* StoreHeader(char* p, Opcode opcode, uint16_t flags, uint32_t request_id,
                         size_t payload_size) {
  p = Store32(p, static_cast<uint32_t>(kHeaderSize - 4 + payload_size));
  *p++ = static_cast<char>(kVersion);
  *p++ = static_cast<char>(opcode);
  p = Store16(p, flags);
  return Store32(p, request_id);
}

// Cuts `message` to at most kMaxErrorMessage bytes without splitting a
// UTF-8 sequence.
std::string_view CutMessage(std::string_view message) {
  if (message.size() <= kMaxErrorMessage) return message;
  size_t n = kMaxErrorMessage;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a boundary.
  while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) --n;
  if (n == 0) n = kMaxErrorMessage;  // not UTF-8 at all: cut anyway
  return message.substr(0, n);
}

constexpr size_t kLengthMin = kHeaderSize - 4;  // 8: the header after the length field

size_t EffectiveMax(size_t max_frame_size) {
  return std::clamp<size_t>(max_frame_size, kHeaderSize, kMaxFrameSize);
}

}  // namespace

std::string_view StatusName(Status s) {
  switch (s) {
    case Status::kOk:
      return "OK";
    case Status::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Status::kUnknownKey:
      return "UNKNOWN_KEY";
    case Status::kKeyExists:
      return "KEY_EXISTS";
    case Status::kStoreUnavailable:
      return "STORE_UNAVAILABLE";
    case Status::kShuttingDown:
      return "SHUTTING_DOWN";
    case Status::kInternal:
      return "INTERNAL";
    case Status::kUnknownOpcode:
      return "UNKNOWN_OPCODE";
    case Status::kNotFound:
      return "NOT_FOUND";
    case Status::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Status::kTooLarge:
      return "TOO_LARGE";
    case Status::kNotServing:
      return "NOT_SERVING";
    case Status::kWrongOwner:
      return "WRONG_OWNER";
    case Status::kUnauthenticated:
      return "UNAUTHENTICATED";
    case Status::kPermissionDenied:
      return "PERMISSION_DENIED";
    case Status::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Status::kMessageIdConflict:
      return "MESSAGE_ID_CONFLICT";
    case Status::kMalformedFrame:
      return "MALFORMED_FRAME";
    case Status::kUnsupportedVersion:
      return "UNSUPPORTED_VERSION";
    case Status::kFrameTooLarge:
      return "FRAME_TOO_LARGE";
  }
  return "UNKNOWN_STATUS";
}

DecodeResult DecodeFrame(std::string_view input, size_t max_frame_size) {
  DecodeResult r;
  auto fail = [&r](Status s) {
    r.state = DecodeState::kError;
    r.error = s;
    return r;
  };
  if (input.size() < 4) return r;  // kNeedMore
  const uint32_t length = Load32(input.data());
  if (length > EffectiveMax(max_frame_size) - 4) return fail(Status::kFrameTooLarge);
  if (length < kLengthMin) return fail(Status::kMalformedFrame);
  if (input.size() < 5) return r;
  if (static_cast<uint8_t>(input[4]) != kVersion) return fail(Status::kUnsupportedVersion);
  if (input.size() < 8) return r;
  const uint16_t flags = Load16(input.data() + 6);
  if (flags & ~(kFlagResponse | kFlagNoForward)) return fail(Status::kMalformedFrame);
  const size_t total = size_t{4} + length;
  if (input.size() < total) return r;
  r.state = DecodeState::kFrame;
  r.consumed = total;
  r.frame.version = kVersion;
  r.frame.opcode = static_cast<uint8_t>(input[5]);
  r.frame.flags = flags;
  r.frame.request_id = Load32(input.data() + 8);
  r.frame.payload = input.substr(kHeaderSize, total - kHeaderSize);
  return r;
}

std::string DescribeDecodeError(std::string_view input, size_t max_frame_size) {
  if (input.size() < 4) return "incomplete frame";
  const uint32_t length = Load32(input.data());
  const size_t max = EffectiveMax(max_frame_size);
  if (length > max - 4) {
    return "frame too large: length " + std::to_string(length) + " above " +
           std::to_string(max - 4);
  }
  if (length < kLengthMin) return "malformed frame: length " + std::to_string(length) + " below 8";
  if (input.size() >= 5 && static_cast<uint8_t>(input[4]) != kVersion) {
    return "unsupported version " + std::to_string(static_cast<uint8_t>(input[4]));
  }
  if (input.size() >= 8 && (Load16(input.data() + 6) & ~kFlagResponse)) {
    return "malformed frame: unknown flag bits set";
  }
  return "malformed frame";
}

void AppendFrame(std::string& out, Opcode opcode, uint16_t flags, uint32_t request_id,
                 std::string_view payload) {
  assert(kHeaderSize + payload.size() <= kMaxFrameSize);
  char* p = Grow(out, kHeaderSize + payload.size());
  p = StoreHeader(p, opcode, flags, request_id, payload.size());
  StoreBytes(p, payload);
}

// --- payloads --------------------------------------------------------------

std::optional<NextIdsRequest> ParseNextIdsRequest(std::string_view payload) {
  if (payload.size() < 2) return std::nullopt;
  const size_t key_len = Load16(payload.data());
  const size_t fixed = 2 + key_len + 4;
  if (payload.size() < fixed) return std::nullopt;
  NextIdsRequest req;
  req.key = payload.substr(2, key_len);
  req.count = Load32(payload.data() + 2 + key_len);
  if (payload.size() == fixed) return req;
  // The optional trailer: u8 len, on_behalf_of, exactly.
  const size_t behalf_len = static_cast<uint8_t>(payload[fixed]);
  if (behalf_len == 0 || payload.size() != fixed + 1 + behalf_len) return std::nullopt;
  req.on_behalf_of = payload.substr(fixed + 1, behalf_len);
  return req;
}

void AppendNextIdsRequest(std::string& out, uint32_t request_id, std::string_view key,
                          uint32_t count, std::string_view on_behalf_of) {
  assert(key.size() <= UINT16_MAX);
  assert(on_behalf_of.size() <= kMaxOnBehalfOf);
  const size_t trailer = on_behalf_of.empty() ? 0 : 1 + on_behalf_of.size();
  const size_t payload = 2 + key.size() + 4 + trailer;
  char* p = Grow(out, kHeaderSize + payload);
  p = StoreHeader(p, Opcode::kNextIds, 0, request_id, payload);
  p = Store16(p, static_cast<uint16_t>(key.size()));
  p = StoreBytes(p, key);
  p = Store32(p, count);
  if (trailer == 0) return;
  *p++ = static_cast<char>(on_behalf_of.size());
  StoreBytes(p, on_behalf_of);
}

void AppendOkNextIds(std::string& out, uint32_t request_id, const IdRangeWire* ranges, size_t n) {
  const size_t payload = 2 + 4 + 16 * n;
  assert(kHeaderSize + payload <= kMaxFrameSize);
  char* p = Grow(out, kHeaderSize + payload);
  p = StoreHeader(p, Opcode::kNextIds, kFlagResponse, request_id, payload);
  p = Store16(p, static_cast<uint16_t>(Status::kOk));
  p = Store32(p, static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    p = Store64(p, static_cast<uint64_t>(ranges[i].first));
    p = Store64(p, static_cast<uint64_t>(ranges[i].last));
  }
}

void AppendOkPing(std::string& out, uint32_t request_id, std::string_view payload) {
  const size_t size = 2 + payload.size();
  assert(kHeaderSize + size <= kMaxFrameSize);
  char* p = Grow(out, kHeaderSize + size);
  p = StoreHeader(p, Opcode::kPing, kFlagResponse, request_id, size);
  p = Store16(p, static_cast<uint16_t>(Status::kOk));
  StoreBytes(p, payload);
}

void AppendError(std::string& out, Opcode opcode, uint32_t request_id, Status status,
                 std::string_view message) {
  message = CutMessage(message);
  const size_t size = 2 + 2 + message.size();
  char* p = Grow(out, kHeaderSize + size);
  p = StoreHeader(p, opcode, kFlagResponse, request_id, size);
  p = Store16(p, static_cast<uint16_t>(status));
  p = Store16(p, static_cast<uint16_t>(message.size()));
  StoreBytes(p, message);
}

void AppendProtocolError(std::string& out, Status status, std::string_view message) {
  AppendError(out, Opcode::kProtocolError, 0, status, message);
}

std::optional<ResponseView> ParseResponse(std::string_view payload) {
  if (payload.size() < 2) return std::nullopt;
  ResponseView v;
  v.status = static_cast<Status>(Load16(payload.data()));
  if (v.status == Status::kOk) {
    v.result = payload.substr(2);
    return v;
  }
  if (payload.size() < 4) return std::nullopt;
  const size_t len = Load16(payload.data() + 2);
  if (payload.size() != 4 + len) return std::nullopt;
  v.message = payload.substr(4);
  return v;
}

std::optional<std::vector<IdRangeWire>> ParseNextIdsResult(std::string_view result) {
  std::vector<IdRangeWire> ranges;
  if (!ParseNextIdsResult(result, &ranges)) return std::nullopt;
  return ranges;
}

bool ParseNextIdsResult(std::string_view result, std::vector<IdRangeWire>* ranges) {
  if (result.size() < 4) return false;
  const uint64_t n = Load32(result.data());
  if (result.size() != 4 + 16 * n) return false;
  ranges->resize(static_cast<size_t>(n));
  const char* p = result.data() + 4;
  for (auto& r : *ranges) {
    r.first = static_cast<int64_t>(Load64(p));
    r.last = static_cast<int64_t>(Load64(p + 8));
    p += 16;
  }
  return true;
}

}  // namespace seqd::proto
