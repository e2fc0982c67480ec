#include "bench_subscriber_link.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace seqd::tools {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

SubscriberLink::SubscriberLink(asio::io_context& io, tcp::resolver::results_type endpoints)
    : strand_(asio::make_strand(io)), socket_(strand_), endpoints_(std::move(endpoints)) {}

void SubscriberLink::Start(std::shared_ptr<void> owner, const std::string& request,
                           std::function<void(bool)> subscribed, std::function<void()> read) {
  asio::post(strand_, [this, owner = std::move(owner), &request,
                       subscribed = std::move(subscribed), read = std::move(read)]() mutable {
    subscribed_ = std::move(subscribed);
    asio::async_connect(socket_, endpoints_,
                        [this, owner, &request, read](const boost::system::error_code& ec,
                                                      const tcp::endpoint&) {
                          if (ec) return Fail("connect: " + ec.message());
                          socket_.set_option(tcp::no_delay(true));
                          asio::async_write(socket_, asio::buffer(request),
                                            [this, owner](const boost::system::error_code& ec,
                                                          size_t) {
                                              if (ec) Fail("write: " + ec.message());
                                            });
                          read();
                        });
  });
}

void SubscriberLink::Stop(std::shared_ptr<void> owner) {
  asio::post(strand_, [this, owner = std::move(owner)] {
    stopped_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
  });
}

void SubscriberLink::Fail(const std::string& what) {
  if (stopped_) return;
  stopped_ = true;
  ++result_.errors;
  ++result_.error_kinds[what];
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (subscribed_) std::exchange(subscribed_, nullptr)(false);
}

void SubscriberLink::Subscribed() {
  if (subscribed_) std::exchange(subscribed_, nullptr)(true);
}

void SubscriberLink::Record(std::optional<Clock::time_point> stamp, Clock::time_point now,
                            const char* unstamped) {
  if (!stamp) {
    ++result_.errors;
    ++result_.error_kinds[unstamped];
    return;
  }
  ++result_.pushes;
  if (counter_) counter_->fetch_add(1, std::memory_order_relaxed);
  result_.latency.Record(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - *stamp).count());
}

}  // namespace seqd::tools
