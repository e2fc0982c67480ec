// The one table from core errors to what each interface answers: the HTTP
// status, the binary protocol's status, the RESP error text and the metric
// `status` label. Every listener maps errors through here and nowhere else,
// and takes every `status` label from here: an Error's from its row, an
// answer made by the protocol layer itself (a malformed frame, a 405) from
// MetricLabelFor(status).
//
// What a client may read: PublicMessage(). The text of kInternal and
// kStoreUnavailable is never shown ("internal error", "store unavailable,
// retry later"; the real message goes to the log): it may come from the
// store and name its user, host, port or schema.
//
// Thread safety: pure functions over a constant table.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "proto/binary_codec.h"

namespace seqd {

struct WireErrorRow {
  ErrorCode code;
  unsigned http_status;           // e.g. 404
  proto::Status binary;           // the binary protocol's status
  std::string_view resp_text;     // RESP error text; empty: the public message
  std::string_view metric_label;  // the `status` label (= ErrorCodeName)
};

// The row of `code`.
const WireErrorRow& WireErrorFor(ErrorCode code);

// The message a client may see: `error.message`, except for kInternal and
// kStoreUnavailable, which are logged (store errors at most once a second)
// and answered with a fixed text.
std::string PublicMessage(const Error& error);

// The binary protocol's status and message for `error`.
struct BinaryError {
  proto::Status status;
  std::string message;
};
BinaryError ToBinaryError(const Error& error);

// The RESP error reply text (without "-" and CRLF) for `error`.
std::string RespErrorText(const Error& error);

// What a protocol layer answers by itself, before any service is called:
// a request or frame it cannot parse, a method a route does not take, a
// body or frame over its limit, an opcode it does not know.
enum class ProtocolError : uint8_t {
  kBadRequest,            // HTTP: a request Beast cannot parse, no Host, ...
  kMethodNotAllowed,      // HTTP 405
  kPayloadTooLarge,       // HTTP 413: the body is over --max-body; code "too_large" as kTooLarge
  kUnsupportedMediaType,  // HTTP 415: refused by the CSRF rule (RefusedAsCrossSite)
  kMalformedFrame,        // binary: a frame that does not decode
  kUnsupportedVersion,    // binary: a frame version this server does not speak
  kFrameTooLarge,         // binary: a frame over the limit
  kUnknownOpcode,         // binary: an opcode with no row in server/binary/binary_ops.h
  kTooManyConnections,    // HTTP 503 to a connection over the cap: counted as "other"
  kTooMuchUnread,         // HTTP 429: the client's address has too many answers unread
};

struct ProtocolErrorRow {
  ProtocolError error;
  unsigned http_status;
  proto::Status binary;
  std::string_view metric_label;  // the `status` label
};

// The row of `error`.
const ProtocolErrorRow& ProtocolErrorFor(ProtocolError error);

// The metric `status` label of a binary answer: "ok", the label of the
// ErrorCode row with that status, or the protocol error's own name
// ("malformed_frame", "unknown_opcode", ...).
std::string_view MetricLabelFor(proto::Status status);

// The metric `status` label of an HTTP answer that was not made from an
// Error (a parse failure, an unknown route, a 405 or 413 from the listener):
// the label of the ErrorCode or ProtocolError that the status stands for,
// or "other". Below 400: "ok".
std::string_view MetricLabelForHttp(unsigned http_status);

}  // namespace seqd
