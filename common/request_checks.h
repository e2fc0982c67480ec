// The request rules every interface shares, decided here once: the range
// of a `count`. (Keys are checked by ValidateKeyText, message fields by
// MessageService; protocol adapters check only their own syntax.)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace seqd {

// The error of a count out of range (below), or of one that is not an
// integer at all.
Error CountError(int64_t max);

// kInvalidArgument "count must be an integer in [1, max]" unless
// 1 <= count <= max. Inline: a take's hot path.
inline Status CheckCount(int64_t count, int64_t max) {
  if (count < 1 || count > max) return CountError(max);
  return OkStatus();
}

// The digits of a count as sent (decimal, no sign), saturating at INT64_MAX
// so CheckCount rejects huge values; nullopt-like -1 for anything else.
int64_t ParseCountText(std::string_view text);

}  // namespace seqd
