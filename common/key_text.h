// What a key's text may be: the one rule for keys, conversation, user,
// sender and client message ids, on every protocol.
//
// A key (documented in docs/http-api.md "Keys") is any well-formed UTF-8
// text of 1 to kMaxKeyLength bytes with no control character (U+0000 to
// U+001F, U+007F to U+009F). Keys compare byte for byte: case, trailing
// spaces and Unicode normalization all count. Anything else is rejected
// before it reaches the store.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/error.h"

namespace seqd {

inline constexpr size_t kMaxKeyLength = 255;

// Keys starting with this are seqd's own (today `seqd.server_msg_id`, the
// message service's server message ids, which it reserves from the store
// directly): no client may take IDs from them, see or change them.
inline constexpr std::string_view kReservedKeyPrefix = "seqd.";

// True if `key` is in the reserved namespace (kReservedKeyPrefix).
inline bool KeyIsReserved(std::string_view key) { return key.starts_with(kReservedKeyPrefix); }

// kInvalidArgument naming the problem, or OK. The text and length only:
// conversation, user and client message ids are checked with it too.
Status ValidateKeyText(std::string_view key);

// True for the common key: 1 to kMaxKeyLength bytes of printable ASCII
// (0x20 to 0x7E), not reserved. Such a key passes ValidateClientKey(); a
// key for which this is false may still pass it (UTF-8 text).
inline bool IsPlainClientKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength || KeyIsReserved(key)) return false;
  for (char c : key) {
    if (c < 0x20 || c > 0x7E) return false;  // char may be signed: bytes >= 0x80 are < 0
  }
  return true;
}

// ValidateKeyText(), and kInvalidArgument "keys starting with 'seqd.' are
// reserved" for a reserved key: the check for every key a client names
// (IdApi's Take, KeyAdmin), so each protocol refuses reserved keys as it
// refuses a bad key. Inline for the common key (a take's hot path).
Status ValidateOtherClientKey(std::string_view key);
inline Status ValidateClientKey(std::string_view key) {
  if (IsPlainClientKey(key)) return OkStatus();
  return ValidateOtherClientKey(key);
}

}  // namespace seqd
