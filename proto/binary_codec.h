// The seqd binary protocol (docs/protocol.md): frame encoding and a decoder
// that works on partial input. Pure functions, no I/O, no Asio; shared by
// the server and the client library.
//
// Thread safety: all functions are reentrant; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seqd::proto {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 12;         // length field included
inline constexpr size_t kMaxFrameSize = 1 << 20;  // whole frame, header included
inline constexpr size_t kMaxErrorMessage = 1024;
inline constexpr size_t kMaxPingPayload = 1024;
inline constexpr uint16_t kFlagResponse = 0x0001;
// On a request (cluster mode, docs/cluster.md): answer WRONG_OWNER instead
// of forwarding when this instance does not own the key. Set by an instance
// forwarding to another (a hop limit of 1) and by clients that route
// themselves.
inline constexpr uint16_t kFlagNoForward = 0x0004;

enum class Opcode : uint8_t {
  kProtocolError = 0x00,  // only in server error frames
  kPing = 0x01,
  kNextIds = 0x02,
  kAuth = 0x03,  // payload: the token's secret (1..kMaxAuthSecret bytes); answer: empty
};

inline constexpr size_t kMaxAuthSecret = 256;

enum class Status : uint16_t {
  kOk = 0,
  kInvalidArgument = 1,
  kUnknownKey = 2,
  kKeyExists = 3,
  kStoreUnavailable = 4,
  kShuttingDown = 5,
  kInternal = 6,
  kUnknownOpcode = 7,
  kNotFound = 8,
  kFailedPrecondition = 9,
  kTooLarge = 10,
  kNotServing = 11,
  kWrongOwner = 12,
  kUnauthenticated = 13,    // no AUTH yet (only PING and AUTH are answered), or a bad secret
  kPermissionDenied = 14,   // the token's scopes do not allow the op for this key
  kResourceExhausted = 15,  // a rate limit (auto-created keys per token); retry later
  kMessageIdConflict = 16,  // SEND: the client message id is stored with other content
  kMalformedFrame = 64,
  kUnsupportedVersion = 65,
  kFrameTooLarge = 66,
};

// True for codes after which the connection is closed.
inline bool IsProtocolError(Status s) { return static_cast<uint16_t>(s) >= 64; }
std::string_view StatusName(Status s);

// A decoded frame. `payload` points into the caller's buffer: valid only as
// long as that buffer is.
struct FrameView {
  uint8_t version = kVersion;
  uint8_t opcode = 0;
  uint16_t flags = 0;
  uint32_t request_id = 0;
  std::string_view payload;
  bool is_response() const { return flags & kFlagResponse; }
};

enum class DecodeState { kFrame, kNeedMore, kError };

struct DecodeResult {
  DecodeState state = DecodeState::kNeedMore;
  size_t consumed = 0;         // bytes of input used (only for kFrame)
  Status error = Status::kOk;  // for kError: kMalformedFrame, kUnsupportedVersion, kFrameTooLarge
  FrameView frame;             // for kFrame
};

// Decodes the first frame in `input`, which may hold a partial frame, one
// frame or many. `max_frame_size` (<= kMaxFrameSize) bounds the whole frame.
// An oversized length is reported as soon as the 4 length bytes are in.
DecodeResult DecodeFrame(std::string_view input, size_t max_frame_size = kMaxFrameSize);

// A one-line message for the error DecodeFrame(input, max_frame_size)
// reported ("unsupported version 2"), for the protocol error frame.
std::string DescribeDecodeError(std::string_view input, size_t max_frame_size = kMaxFrameSize);

// Appends one frame to `out`. REQUIRES: kHeaderSize + payload.size() <= kMaxFrameSize.
void AppendFrame(std::string& out, Opcode opcode, uint16_t flags, uint32_t request_id,
                 std::string_view payload);

// --- payloads -------------------------------------------------------------

struct IdRangeWire {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const IdRangeWire&) const = default;
};

// Longest `on_behalf_of` a NEXT_IDS may carry (a token id).
inline constexpr size_t kMaxOnBehalfOf = 255;

struct NextIdsRequest {
  std::string_view key;  // points into the payload
  uint32_t count = 0;
  // Cluster peers forwarding a client's request: whom the request is for
  // (its token id), so the owner charges that client's limits. Empty when
  // absent. Points into the payload.
  std::string_view on_behalf_of;
};

// nullopt if the payload is not `u16 key_len, key, u32 count` exactly,
// optionally followed by `u8 len, on_behalf_of` (1 to kMaxOnBehalfOf bytes).
std::optional<NextIdsRequest> ParseNextIdsRequest(std::string_view payload);
// `on_behalf_of`: empty, or at most kMaxOnBehalfOf bytes.
void AppendNextIdsRequest(std::string& out, uint32_t request_id, std::string_view key,
                          uint32_t count, std::string_view on_behalf_of = {});

// Response writers: append a whole response frame to `out`.
void AppendOkNextIds(std::string& out, uint32_t request_id, const IdRangeWire* ranges, size_t n);
void AppendOkPing(std::string& out, uint32_t request_id, std::string_view payload);
// Error response to one request (message cut to kMaxErrorMessage).
void AppendError(std::string& out, Opcode opcode, uint32_t request_id, Status status,
                 std::string_view message);
// The frame sent before closing on a protocol error (opcode 0, request id 0).
void AppendProtocolError(std::string& out, Status status, std::string_view message);

// A response payload split into status and the rest.
struct ResponseView {
  Status status = Status::kOk;
  std::string_view result;   // when kOk: the op's result bytes
  std::string_view message;  // otherwise: the error message
};
// nullopt if the payload is too short or the message length is wrong.
std::optional<ResponseView> ParseResponse(std::string_view payload);
// nullopt unless `result` is `u32 n, n × (i64, i64)` exactly.
std::optional<std::vector<IdRangeWire>> ParseNextIdsResult(std::string_view result);
// The same, into `*ranges` (replacing what it held, reusing its capacity, so
// a caller that keeps the vector allocates nothing per answer). False, and
// `*ranges` unspecified, unless `result` is well formed.
bool ParseNextIdsResult(std::string_view result, std::vector<IdRangeWire>* ranges);

}  // namespace seqd::proto
