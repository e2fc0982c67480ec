// A duration in one byte, on a log scale: 0 is zero, code c >= 1 is
// 2^((c - 1) / 8) microseconds, so each code is 9% above the one below it,
// from 1 us to about 4,000 s. For what a key keeps of its reservations'
// latency (KeyState::reserve_latency): a step-sizing estimate, where 9% is
// far inside its margin and 3 bytes saved per key add up over a million.
//
// Encode rounds up (an estimate never understates the latency), so halving
// is exact: Encode(Decode(c) / 2) == c - 8 for c > 8.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace seqd::allocator_internal {

struct LatencyByte {
  static constexpr int kCodesPerOctave = 8;

  static uint8_t Encode(double seconds) {
    if (!(seconds > 0)) return 0;  // NaN too
    const double micros = seconds * 1e6;
    if (micros <= 1) return 1;
    // Less a hair, so that an exact power (a halving) is not rounded a step up.
    const double code = std::ceil(std::log2(micros) * kCodesPerOctave - 1e-9) + 1;
    return static_cast<uint8_t>(std::min(code, 255.0));
  }

  static double Decode(uint8_t code) {
    if (code == 0) return 0;
    return std::exp2(static_cast<double>(code - 1) / kCodesPerOctave) * 1e-6;
  }
};

}  // namespace seqd::allocator_internal
