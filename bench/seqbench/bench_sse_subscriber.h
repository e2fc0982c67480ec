// seqbench --subscribe N --sse HOST:PORT: subscribers that read Server-Sent
// Events (GET /conversations/CONV/events, or GET /events?conv=..&conv=..
// for several) instead of the binary protocol's SUBSCRIBE, measured the same
// way as BenchSubscriber: per message event, the time from its SEND being
// written (the stamp at the start of its payload, StampedPayload) to the
// event being read. Plain HTTP/1.1 only; the body may be chunked.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "bench_subscriber.h"
#include "bench_subscriber_link.h"

namespace seqd::tools {

// Thread safety: Start and Stop from any thread; result() only after the
// io_context stopped running.
class SseBenchSubscriber : public std::enable_shared_from_this<SseBenchSubscriber> {
 public:
  SseBenchSubscriber(boost::asio::io_context& io,
                     boost::asio::ip::tcp::resolver::results_type endpoints, std::string host,
                     std::vector<std::string> convs, std::string token);
  // Connects and sends the request; `subscribed(ok)` runs once, on an I/O
  // thread, when the 200 head and the first body bytes (the retry hint) have
  // arrived, or on failure.
  void Start(std::function<void(bool)> subscribed);
  void Stop();
  // As BenchSubscriber::CountInto: each event read increments `*counter`.
  void CountInto(std::atomic<uint64_t>* counter) { link_.CountInto(counter); }
  const BenchSubscriber::Result& result() const { return link_.result(); }

 private:
  void Fail(const std::string& what) { link_.Fail(what); }
  void Read();
  bool Parse();    // false when the stream failed
  bool Unchunk();  // moves decoded chunk data from in_ to body_
  void Events();   // consumes the complete events in body_

  SubscriberLink link_;
  std::string request_;
  std::string in_;    // bytes read, not yet parsed
  std::string body_;  // event text not yet ended by a blank line
  bool head_done_ = false;
  bool chunked_ = false;
};

}  // namespace seqd::tools
