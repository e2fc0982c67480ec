#include "common/error.h"

namespace seqd {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kUnknownKey:
      return "unknown_key";
    case ErrorCode::kKeyExists:
      return "key_exists";
    case ErrorCode::kStoreUnavailable:
      return "store_unavailable";
    case ErrorCode::kShuttingDown:
      return "shutting_down";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kFailedPrecondition:
      return "failed_precondition";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kNotServing:
      return "not_serving";
    case ErrorCode::kWrongOwner:
      return "wrong_owner";
    case ErrorCode::kUnauthenticated:
      return "unauthenticated";
    case ErrorCode::kPermissionDenied:
      return "permission_denied";
    case ErrorCode::kResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::kMessageIdConflict:
      return "message_id_conflict";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

}  // namespace seqd
