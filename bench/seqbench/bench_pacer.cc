// seqbench's open-loop clock (bench_pacer.h).
#include "bench_pacer.h"

#include <boost/asio/post.hpp>
#include <chrono>

namespace seqd::bench {

namespace asio = boost::asio;

BenchPacer::BenchPacer(asio::io_context& io, PaceGrid grid, const std::atomic<bool>& stop,
                       std::vector<std::shared_ptr<BenchConnection>> connections)
    : strand_(asio::make_strand(io)),
      timer_(strand_),
      grid_(grid),
      stop_(stop),
      connections_(std::move(connections)) {}

void BenchPacer::Start(Clock::time_point start) {
  asio::post(strand_, [self = shared_from_this(), start] {
    self->start_ = start;
    self->Wait(start);
  });
}

void BenchPacer::Stop() {
  asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
}

void BenchPacer::Wait(Clock::time_point at) {
  next_tick_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec) self->Tick();
  });
}

// Tells every connection the time, then waits for the next tick; a late
// tick skips the ticks it missed (the connections send all that is due).
// The order alternates from tick to tick, so no connection's requests
// always leave first.
void BenchPacer::Tick() {
  if (stop_) return;
  const Clock::time_point now = Clock::now();
  if (forward_ = !forward_; forward_) {
    for (const auto& c : connections_) c->Due(now);
  } else {
    for (auto it = connections_.rbegin(); it != connections_.rend(); ++it) (*it)->Due(now);
  }
  Clock::time_point next = next_tick_ + grid_.tick;
  if (next <= now) next = grid_.TickAfter(start_, now);
  Wait(next);
}

}  // namespace seqd::bench
