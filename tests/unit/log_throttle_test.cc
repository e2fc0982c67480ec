// LogThrottle: the first line passes, those within the next second are
// left out and counted, and the count comes with the next line let through.
#include "server/base/log_throttle.h"

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <thread>

namespace seqd {

TEST_CASE("log throttle: one line a second, with the count of those left out") {
  LogThrottle throttle;
  const std::optional<uint64_t> first = throttle.Take();
  REQUIRE(first);
  CHECK(*first == 0);
  CHECK_FALSE(throttle.Take());
  CHECK_FALSE(throttle.Take());
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  const std::optional<uint64_t> next = throttle.Take();
  REQUIRE(next);
  CHECK(*next == 2);
  CHECK_FALSE(throttle.Take());
}

}  // namespace seqd
