// seqbench --subscribe: subscriber connections that measure push fan-out
// latency. Each one SUBSCRIBEs to the benchmark's conversations over the
// binary protocol (raw codec), then reads pushes and records, per pushed
// message, the time from its SEND being written (a stamp in its payload) to
// the push being read. Stamps are the steady clock of this process: senders
// and subscribers run in the same seqbench.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "bench_subscriber_link.h"
#include "read_buffer.h"

namespace seqd::tools {

// A benchmark message's payload: the send time (steady clock nanoseconds,
// 16 hex digits), padded with 'x' to `size` bytes (at least 16).
std::string StampedPayload(std::chrono::steady_clock::time_point sent, size_t size);
// The send time in a StampedPayload, if it is one.
std::optional<std::chrono::steady_clock::time_point> PayloadStamp(std::string_view payload);

// Thread safety: Start and Stop from any thread; result() only after the
// io_context stopped running.
class BenchSubscriber : public std::enable_shared_from_this<BenchSubscriber> {
 public:
  using Result = SubscriberResult;

  BenchSubscriber(boost::asio::io_context& io,
                  boost::asio::ip::tcp::resolver::results_type endpoints,
                  std::vector<std::string> convs, std::string token);
  // Connects and subscribes; `subscribed(ok)` runs once, on an I/O thread.
  void Start(std::function<void(bool)> subscribed);
  void Stop();
  // Each push read also increments `*counter` (shared by all subscribers,
  // read while they run). Before Start.
  void CountInto(std::atomic<uint64_t>* counter) { link_.CountInto(counter); }
  const Result& result() const { return link_.result(); }

 private:
  void Read();
  bool Parse();  // false when the connection failed

  SubscriberLink link_;
  std::string out_;  // AUTH (with a token), then SUBSCRIBE
  ReadBuffer in_;
};

}  // namespace seqd::tools
