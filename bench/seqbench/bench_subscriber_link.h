// What seqbench's two kinds of --subscribe connection share: BenchSubscriber
// (the binary protocol's SUBSCRIBE) and SseBenchSubscriber (Server-Sent
// Events) each hold a SubscriberLink, which connects, writes their one
// request, keeps their counts and fails them once.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12

#include "bench_histogram.h"

namespace seqd::tools {

// A subscriber's counts, read once the I/O threads are done.
struct SubscriberResult {
  bool subscribed = false;
  uint64_t pushes = 0;
  uint64_t errors = 0;
  std::map<std::string, uint64_t> error_kinds;
  Histogram latency;
};

// The connection a subscriber reads its pushes from. Start and Stop from any
// thread; the rest on the strand (in the subscriber's handlers). The
// handlers Start and Stop set up keep `owner`, the subscriber, alive.
class SubscriberLink {
 public:
  using Clock = std::chrono::steady_clock;

  SubscriberLink(boost::asio::io_context& io,
                 boost::asio::ip::tcp::resolver::results_type endpoints);

  // Connects, writes `request` (which `owner` keeps alive) and calls
  // `read()`; `subscribed(ok)` runs once: true at Subscribed(), false at a
  // failure before it.
  void Start(std::shared_ptr<void> owner, const std::string& request,
             std::function<void(bool)> subscribed, std::function<void()> read);
  // Closes the connection; what fails after that counts for nothing.
  void Stop(std::shared_ptr<void> owner);

  // Counts an error of kind `what` and closes the connection, once (not
  // after Stop).
  void Fail(const std::string& what);
  // The subscription is live: runs `subscribed(true)` the first time.
  void Subscribed();
  // A pushed message read at `now`: its latency from the send time in its
  // payload, or, with no stamp there, an error of kind `unstamped`.
  void Record(std::optional<Clock::time_point> stamp, Clock::time_point now,
              const char* unstamped);

  // Each push recorded also increments `*counter` (shared by all
  // subscribers, read while they run). Before Start.
  void CountInto(std::atomic<uint64_t>* counter) { counter_ = counter; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  bool stopped() const { return stopped_; }
  SubscriberResult& result() { return result_; }
  const SubscriberResult& result() const { return result_; }

 private:
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::ip::tcp::resolver::results_type endpoints_;
  std::function<void(bool)> subscribed_;
  bool stopped_ = false;
  std::atomic<uint64_t>* counter_ = nullptr;
  SubscriberResult result_;
};

}  // namespace seqd::tools
