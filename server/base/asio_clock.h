// The production Clock: steady_clock time, timers on an Asio io_context.
//
// Thread safety: safe from any thread. Timer callbacks run on the
// io_context's threads (network threads), so they must not block.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "server/base/clock.h"

namespace seqd {

class AsioClock final : public Clock {
 public:
  // `io` must outlive this clock and every timer it starts.
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}

  TimePoint Now() const override { return std::chrono::steady_clock::now(); }

  void RunAt(TimePoint when, std::function<void()> fn) override {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, when);
    timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
      if (!ec) fn();
    });
  }

 private:
  boost::asio::io_context& io_;
};

}  // namespace seqd
