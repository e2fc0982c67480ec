// seqbench's open-loop schedule (--rate): every connection sends on the
// same grid, `start + k * interval` with interval = connections / rate, and
// the pacer (bench_pacer.h) wakes once per tick: a whole number of
// intervals, at least 100 us, so a request leaves at most that late (the
// delay is counted in its latency) and the load generator wakes at most
// 10,000 times a second.
//
// Thread safety: a value.
#pragma once

#include <algorithm>
#include <chrono>

namespace seqd::bench {

struct PaceGrid {
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kMinTick = std::chrono::microseconds(100);

  Clock::duration interval;  // between one connection's requests
  Clock::duration tick;      // between the pacer's wake-ups: a multiple of interval

  // Precondition: rate > 0, connections > 0.
  static PaceGrid For(double rate, int connections) {
    const auto interval = std::max<Clock::duration>(
        Clock::duration(1), std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(connections / rate)));
    const auto per_tick = (kMinTick + interval - Clock::duration(1)) / interval;
    return {interval, interval * std::max<Clock::rep>(1, per_tick)};
  }

  // The first point of the `step` grid from `start` at or after `t`.
  static Clock::time_point AtOrAfter(Clock::time_point start, Clock::duration step,
                                     Clock::time_point t) {
    if (t <= start) return start;
    return start + (t - start + step - Clock::duration(1)) / step * step;
  }
  // The first request time at or after `t`.
  Clock::time_point NextAtOrAfter(Clock::time_point start, Clock::time_point t) const {
    return AtOrAfter(start, interval, t);
  }
  // The first tick strictly after `t`.
  Clock::time_point TickAfter(Clock::time_point start, Clock::time_point t) const {
    return AtOrAfter(start, tick, t + Clock::duration(1));
  }
};

}  // namespace seqd::bench
