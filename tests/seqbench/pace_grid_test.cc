// seqbench's open-loop schedule (bench/seqbench/pace_grid.h): a connection's
// requests are `connections / rate` apart, the pacer's ticks a whole number
// of those and at least 100 us apart, and both grids start at the run's
// start.
#include "pace_grid.h"

#include <doctest/doctest.h>

#include <chrono>

using seqd::bench::PaceGrid;
using namespace std::chrono_literals;

TEST_CASE("PaceGrid: the interval is connections over rate; a tick is whole intervals >= 100 us") {
  // 800,000/s over 4 connections: 5 us apart, 20 requests a tick.
  PaceGrid g = PaceGrid::For(800000, 4);
  CHECK(g.interval == 5us);
  CHECK(g.tick == 100us);
  // 30 us apart: a tick of 4 intervals (120 us), not 100 us.
  g = PaceGrid::For(100000, 3);
  CHECK(g.interval == 30us);
  CHECK(g.tick == 120us);
  // Slower than 100 us apart: a tick per request.
  g = PaceGrid::For(400, 2);
  CHECK(g.interval == 5ms);
  CHECK(g.tick == 5ms);
  // Past a nanosecond apart the interval stays 1 ns, and a tick 100 us.
  g = PaceGrid::For(1e12, 1);
  CHECK(g.interval == 1ns);
  CHECK(g.tick == 100us);
}

TEST_CASE("PaceGrid: the next request time and the next tick are on the start's grid") {
  const PaceGrid g = PaceGrid::For(100000, 3);  // 30 us, ticks of 120 us
  const PaceGrid::Clock::time_point start{1s};
  CHECK(g.NextAtOrAfter(start, start - 1ms) == start);  // before the start: the start
  CHECK(g.NextAtOrAfter(start, start) == start);
  CHECK(g.NextAtOrAfter(start, start + 1ns) == start + 30us);
  CHECK(g.NextAtOrAfter(start, start + 30us) == start + 30us);
  CHECK(g.NextAtOrAfter(start, start + 31us) == start + 60us);
  CHECK(g.TickAfter(start, start) == start + 120us);  // strictly after
  CHECK(g.TickAfter(start, start + 119us) == start + 120us);
  CHECK(g.TickAfter(start, start + 120us) == start + 240us);
  CHECK(g.TickAfter(start, start + 1ms) == start + 1080us);
}
