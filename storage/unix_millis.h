// The host's clock in unix millis, for the times a store keeps where no
// database clock stamps them (the memory stores; block tokens' created_ms).
//
// Thread safety: callable from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace seqd {

inline int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace seqd
