// When a connection's timer next checks its deadlines (the binary and RESP
// sessions): the idle deadline (one idle period ahead while requests are in
// flight), and at least every half of the shorter of the request and write
// timeouts, since a frame or a write starts its deadline without touching
// the timer (that would cost the hot path): each closes within 1.5 times its
// timeout, or at it if the deadline is given. Never sooner than 1 ms ahead.
//
// Thread safety: a pure function.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace seqd {

struct ConnTimeouts {
  std::chrono::seconds idle{0};     // 0: none
  std::chrono::seconds request{0};  // a begun frame or command must be whole within it; 0: none
  std::chrono::seconds write{0};    // a write must be taken within it; 0: none
};

struct ConnCheckState {
  std::chrono::steady_clock::time_point now;
  std::chrono::steady_clock::time_point last_activity;
  bool busy = false;  // requests in flight (or subscriptions): not idle
  std::optional<std::chrono::steady_clock::time_point> frame_since;  // a frame begun then
  std::optional<std::chrono::steady_clock::time_point> write_since;  // a write in flight since
};

inline std::chrono::steady_clock::time_point NextConnCheck(const ConnTimeouts& t,
                                                           const ConnCheckState& s) {
  auto next = s.now + std::chrono::hours(24);
  if (t.idle.count() > 0) next = s.busy ? s.now + t.idle : s.last_activity + t.idle;
  for (std::chrono::seconds period : {t.request, t.write}) {
    if (period.count() > 0) next = std::min(next, s.now + period / 2);
  }
  if (s.frame_since && t.request.count() > 0) next = std::min(next, *s.frame_since + t.request);
  if (s.write_since && t.write.count() > 0) next = std::min(next, *s.write_since + t.write);
  return std::max(next, s.now + std::chrono::milliseconds(1));
}

}  // namespace seqd
