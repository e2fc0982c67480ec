#include "server/service/wire_errors.h"

#include <array>
#include <optional>

#include "common/client_safe_message.h"
#include "server/base/log.h"
#include "server/base/log_throttle.h"

namespace seqd {
namespace {

using proto::Status;

// One row per ErrorCode, in enum order (checked below).
constexpr std::array<WireErrorRow, 15> kRows = {{
    {ErrorCode::kInvalidArgument, 400, Status::kInvalidArgument, "", "invalid_argument"},
    {ErrorCode::kUnknownKey, 404, Status::kUnknownKey, "", "unknown_key"},
    {ErrorCode::kKeyExists, 409, Status::kKeyExists, "", "key_exists"},
    {ErrorCode::kStoreUnavailable, 503, Status::kStoreUnavailable,
     "store unavailable: no IDs could be reserved in time, retry later", "store_unavailable"},
    {ErrorCode::kShuttingDown, 503, Status::kShuttingDown, "server is shutting down",
     "shutting_down"},
    {ErrorCode::kNotFound, 404, Status::kNotFound, "", "not_found"},
    {ErrorCode::kFailedPrecondition, 409, Status::kFailedPrecondition, "", "failed_precondition"},
    {ErrorCode::kTooLarge, 413, Status::kTooLarge, "", "too_large"},
    {ErrorCode::kNotServing, 503, Status::kNotServing, "", "not_serving"},
    {ErrorCode::kWrongOwner, 503, Status::kWrongOwner, "", "wrong_owner"},
    {ErrorCode::kUnauthenticated, 401, Status::kUnauthenticated, "", "unauthenticated"},
    {ErrorCode::kPermissionDenied, 403, Status::kPermissionDenied, "", "permission_denied"},
    {ErrorCode::kResourceExhausted, 429, Status::kResourceExhausted, "", "resource_exhausted"},
    {ErrorCode::kMessageIdConflict, 409, Status::kMessageIdConflict, "", "message_id_conflict"},
    {ErrorCode::kInternal, 500, Status::kInternal, "internal error", "internal"},
}};

// The answers a protocol layer makes by itself, in enum order.
constexpr std::array<ProtocolErrorRow, 10> kProtocolRows = {{
    {ProtocolError::kBadRequest, 400, Status::kMalformedFrame, "bad_request"},
    {ProtocolError::kMethodNotAllowed, 405, Status::kInvalidArgument, "method_not_allowed"},
    // The code and label of kTooLarge: one name for 413, whoever answers it.
    {ProtocolError::kPayloadTooLarge, 413, Status::kFrameTooLarge, "too_large"},
    {ProtocolError::kUnsupportedMediaType, 415, Status::kInvalidArgument, "unsupported_media_type"},
    {ProtocolError::kMalformedFrame, 400, Status::kMalformedFrame, "malformed_frame"},
    {ProtocolError::kUnsupportedVersion, 400, Status::kUnsupportedVersion, "unsupported_version"},
    {ProtocolError::kFrameTooLarge, 413, Status::kFrameTooLarge, "frame_too_large"},
    {ProtocolError::kUnknownOpcode, 400, Status::kUnknownOpcode, "unknown_opcode"},
    {ProtocolError::kTooManyConnections, 503, Status::kResourceExhausted, "other"},
    {ProtocolError::kTooMuchUnread, 429, Status::kResourceExhausted, "resource_exhausted"},
}};

// HTTP answers that a route makes without an Error (an unknown path, a
// 405), and the row whose label they count under.
struct HttpStatusRow {
  unsigned http_status;
  std::optional<ErrorCode> code;          // its label, or
  std::optional<ProtocolError> protocol;  // this one's
};
constexpr std::array<HttpStatusRow, 7> kHttpRows = {{
    {400, ErrorCode::kInvalidArgument, std::nullopt},
    {404, ErrorCode::kNotFound, std::nullopt},
    {405, std::nullopt, ProtocolError::kMethodNotAllowed},
    {413, std::nullopt, ProtocolError::kPayloadTooLarge},
    {415, std::nullopt, ProtocolError::kUnsupportedMediaType},
    {500, ErrorCode::kInternal, std::nullopt},
    {503, ErrorCode::kStoreUnavailable, std::nullopt},
}};

constexpr bool ProtocolRowsInEnumOrder() {
  for (size_t i = 0; i < kProtocolRows.size(); ++i) {
    if (static_cast<size_t>(kProtocolRows[i].error) != i) return false;
  }
  return static_cast<size_t>(ProtocolError::kTooMuchUnread) + 1 == kProtocolRows.size();
}
static_assert(ProtocolRowsInEnumOrder(), "kProtocolRows: one row per ProtocolError, in order");

// Logs a store error's full text, at most once a second (a database that is
// down fails every request), with the count of those not logged.
void LogStoreError(const Error& error) {
  static LogThrottle throttle;
  const std::optional<uint64_t> left_out = throttle.Take();
  if (!left_out) return;
  const uint64_t n = *left_out;
  SEQD_LOG(kWarn) << "store unavailable: " << error.message
                  << (n > 0 ? " (" + std::to_string(n) + " more not logged)" : std::string());
}

constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kRows.size(); ++i) {
    if (static_cast<size_t>(kRows[i].code) != i) return false;
  }
  return static_cast<size_t>(ErrorCode::kInternal) + 1 == kRows.size();
}
static_assert(RowsInEnumOrder(), "kRows: one row per ErrorCode, in enum order");

}  // namespace

const WireErrorRow& WireErrorFor(ErrorCode code) { return kRows[static_cast<size_t>(code)]; }

std::string PublicMessage(const Error& error) {
  if (error.code == ErrorCode::kInternal) {
    SEQD_LOG(kError) << "internal error: " << error.message;
  } else if (error.code == ErrorCode::kStoreUnavailable) {
    LogStoreError(error);
  }
  return ClientSafeMessage(error);
}

BinaryError ToBinaryError(const Error& error) {
  return BinaryError{WireErrorFor(error.code).binary, PublicMessage(error)};
}

std::string RespErrorText(const Error& error) {
  const WireErrorRow& row = WireErrorFor(error.code);
  if (!row.resp_text.empty()) return std::string(row.resp_text);
  if (error.code == ErrorCode::kInvalidArgument) return "invalid key: " + error.message;
  return PublicMessage(error);
}

const ProtocolErrorRow& ProtocolErrorFor(ProtocolError error) {
  return kProtocolRows[static_cast<size_t>(error)];
}

std::string_view MetricLabelFor(proto::Status status) {
  if (status == proto::Status::kOk) return "ok";
  for (const WireErrorRow& row : kRows) {
    if (row.binary == status) return row.metric_label;
  }
  for (const ProtocolError e : {ProtocolError::kMalformedFrame, ProtocolError::kUnsupportedVersion,
                                ProtocolError::kFrameTooLarge, ProtocolError::kUnknownOpcode}) {
    if (ProtocolErrorFor(e).binary == status) return ProtocolErrorFor(e).metric_label;
  }
  return "other";
}

std::string_view MetricLabelForHttp(unsigned http_status) {
  if (http_status < 400) return "ok";
  for (const HttpStatusRow& row : kHttpRows) {
    if (row.http_status != http_status) continue;
    return row.code ? WireErrorFor(*row.code).metric_label
                    : ProtocolErrorFor(*row.protocol).metric_label;
  }
  return "other";
}

}  // namespace seqd
