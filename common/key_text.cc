#include "common/key_text.h"

#include <string>

#include "common/utf8.h"

namespace seqd {

Status ValidateKeyText(std::string_view key) {
  if (key.empty()) return MakeError(ErrorCode::kInvalidArgument, "key is empty");
  if (key.size() > kMaxKeyLength) {
    return MakeError(ErrorCode::kInvalidArgument, "key is " + std::to_string(key.size()) +
                                                      " bytes; the limit is " +
                                                      std::to_string(kMaxKeyLength));
  }
  switch (CheckIdentifierText(key)) {
    case TextFault::kOk:
      return OkStatus();
    case TextFault::kNotUtf8:
      return MakeError(ErrorCode::kInvalidArgument, "key is not valid UTF-8");
    case TextFault::kControl:
      return MakeError(ErrorCode::kInvalidArgument, "key may not contain control characters");
  }
  return OkStatus();
}

Status ValidateOtherClientKey(std::string_view key) {
  if (Status s = ValidateKeyText(key); !s) return s;
  if (KeyIsReserved(key)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "keys starting with '" + std::string(kReservedKeyPrefix) + "' are reserved");
  }
  return OkStatus();
}

}  // namespace seqd
