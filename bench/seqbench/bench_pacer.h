// seqbench's open-loop clock (--rate): one timer for all load connections.
//
// Once per tick of the grid (pace_grid.h) the pacer tells every connection
// the time; each sends what has come due, stamped with its scheduled time.
// One wake-up per tick for the whole run, rather than one per connection
// (as before: 37,000 timer re-arms a second at 800k requests/s over 4
// connections), leaves the load generator's core to the requests.
//
// Thread safety: Start and Stop from any thread; the ticks run on the
// pacer's strand, and each connection's sends on its own.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "bench_connection.h"
#include "pace_grid.h"
#include "seqbench.h"

namespace seqd::bench {

class BenchPacer : public std::enable_shared_from_this<BenchPacer> {
 public:
  // `stop` outlives the pacer; `connections` are told the time each tick.
  BenchPacer(boost::asio::io_context& io, PaceGrid grid, const std::atomic<bool>& stop,
             std::vector<std::shared_ptr<BenchConnection>> connections);

  // The first tick at `start` (the grid's origin).
  void Start(Clock::time_point start);
  void Stop();

 private:
  void Wait(Clock::time_point at);
  void Tick();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  const PaceGrid grid_;
  const std::atomic<bool>& stop_;
  const std::vector<std::shared_ptr<BenchConnection>> connections_;
  Clock::time_point start_{};
  Clock::time_point next_tick_{};
  bool forward_ = false;  // this tick tells the connections in their order
};

}  // namespace seqd::bench
