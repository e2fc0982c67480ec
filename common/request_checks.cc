#include "common/request_checks.h"

#include <limits>
#include <string>

namespace seqd {

Error CountError(int64_t max) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "count must be an integer in [1, " + std::to_string(max) + "]");
}

int64_t ParseCountText(std::string_view text) {
  if (text.empty()) return -1;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    const int d = c - '0';
    n = n > (kMax - d) / 10 ? kMax : n * 10 + d;
  }
  return n;
}

}  // namespace seqd
