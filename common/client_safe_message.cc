#include "common/client_safe_message.h"

namespace seqd {

std::string ClientSafeMessage(const Error& error) {
  if (error.code == ErrorCode::kInternal) return "internal error";
  if (error.code == ErrorCode::kStoreUnavailable) return "store unavailable, retry later";
  return error.message;
}

}  // namespace seqd
