// NextConnCheck (server/net/conn_check.h): the idle deadline, one idle
// period ahead while busy, at least every half of the shorter timeout, a
// begun frame's and a write's own deadlines, and never sooner than 1 ms.
#include "server/net/conn_check.h"

#include <doctest/doctest.h>

namespace seqd {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

const auto kNow = std::chrono::steady_clock::time_point() + hours(1000);

TEST_CASE("idle: last activity + idle when nothing is in flight, now + idle when busy") {
  const ConnTimeouts t{seconds(300), seconds(0), seconds(0)};
  CHECK(NextConnCheck(t, {kNow, kNow - seconds(100), false, {}, {}}) == kNow + seconds(200));
  CHECK(NextConnCheck(t, {kNow, kNow - seconds(100), true, {}, {}}) == kNow + seconds(300));
  // No timeout at all: a day ahead.
  CHECK(NextConnCheck({}, {kNow, kNow, false, {}, {}}) == kNow + hours(24));
}

TEST_CASE("at least every half of the shorter of the request and write timeouts") {
  CHECK(NextConnCheck({seconds(300), seconds(10), seconds(30)}, {kNow, kNow, false, {}, {}}) ==
        kNow + seconds(5));
  CHECK(NextConnCheck({seconds(300), seconds(0), seconds(30)}, {kNow, kNow, false, {}, {}}) ==
        kNow + seconds(15));
}

TEST_CASE("a begun frame and a write in flight are checked at their own deadlines") {
  const ConnTimeouts t{seconds(300), seconds(10), seconds(30)};
  CHECK(NextConnCheck(t, {kNow, kNow, true, kNow - seconds(8), {}}) == kNow + seconds(2));
  CHECK(NextConnCheck(t, {kNow, kNow, true, {}, kNow - seconds(27)}) == kNow + seconds(3));
  CHECK(NextConnCheck(t, {kNow, kNow, true, kNow - seconds(9), kNow - seconds(29)}) ==
        kNow + seconds(1));
  // A deadline of a timeout turned off does not count.
  const ConnTimeouts no_write{seconds(300), seconds(10), seconds(0)};
  CHECK(NextConnCheck(no_write, {kNow, kNow, true, {}, kNow - seconds(100)}) == kNow + seconds(5));
}

TEST_CASE("a deadline already past is checked 1 ms ahead, never at once") {
  const ConnTimeouts t{seconds(300), seconds(10), seconds(30)};
  CHECK(NextConnCheck(t, {kNow, kNow, true, kNow - seconds(60), {}}) == kNow + milliseconds(1));
  CHECK(NextConnCheck(t, {kNow, kNow - hours(1), false, {}, {}}) == kNow + milliseconds(1));
}

}  // namespace
}  // namespace seqd
