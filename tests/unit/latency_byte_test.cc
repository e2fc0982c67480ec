#include "server/core/latency_byte.h"

#include <doctest/doctest.h>

using seqd::allocator_internal::LatencyByte;

TEST_CASE("LatencyByte: zero, the ends, and never below the latency it encodes") {
  CHECK(LatencyByte::Encode(0) == 0);
  CHECK(LatencyByte::Encode(-1) == 0);
  CHECK(LatencyByte::Decode(0) == 0);
  CHECK(LatencyByte::Encode(1e-9) == 1);
  CHECK(LatencyByte::Decode(1) == doctest::Approx(1e-6));
  CHECK(LatencyByte::Encode(1e9) == 255);  // saturates: about 4,000 s
  uint8_t previous = 0;
  for (double s = 1e-6; s < 3000; s *= 1.013) {
    const uint8_t code = LatencyByte::Encode(s);
    CHECK(code >= previous);                             // monotonic
    CHECK(LatencyByte::Decode(code) >= s * (1 - 1e-9));  // rounds up
    CHECK(LatencyByte::Decode(code) <= s * 1.0906);      // by at most one code (2^(1/8))
    previous = code;
  }
}

TEST_CASE("LatencyByte: halving a decoded value is exactly 8 codes down") {
  // What a key does at every landing: max(latency, previous / 2). A
  // rounding that crept up would stop the estimate from decaying.
  for (int code = 9; code <= 255; ++code) {
    const auto c = static_cast<uint8_t>(code);
    CHECK(LatencyByte::Encode(LatencyByte::Decode(c) / 2) == code - 8);
    CHECK(LatencyByte::Encode(LatencyByte::Decode(c)) == code);
  }
}
