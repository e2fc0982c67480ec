#include "server/service/wire_errors.h"

#include <array>

#include "server/core/log.h"

namespace seqd {
namespace {

using proto::Status;

// One row per ErrorCode, in enum order (checked below).
constexpr std::array<WireErrorRow, 14> kRows = {{
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
    {ErrorCode::kInternal, 500, Status::kInternal, "internal error", "internal"},
}};

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
    return "internal error";
  }
  return error.message;
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

}  // namespace seqd
