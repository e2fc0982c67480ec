// The one deadline of an HTTP connection (http_session.cc) and what its
// session does when an answer's write passes it. Private to server/http;
// Asio only, no Beast.
//
// Thread safety: an HttpDeadline is touched only on its connection's
// strand (the executor it was made with). HttpWriteTimedOut may be called
// from any thread.
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/error.hpp>
#include <chrono>
#include <memory>
#include <string_view>

#include "server/http/http_session.h"

namespace seqd {

// What the deadline under way bounds. kWrite: the write of an answer (a
// whole response, or one write of a stream's events); kOther: reading a
// request, the TLS handshake, lingering.
enum class HttpDeadlineFor { kOther, kWrite };

// One lazy timer: moving the deadline later only records it (the timer
// re-arms when it fires early), so a keep-alive request costs no timer op.
// When the deadline passes, owner->OnDeadline(what) runs on the strand;
// the timer holds the owner weakly (an idle deadline does not keep a
// finished connection alive). The owner must outlive this object's use
// (it is the owner's member).
template <typename Executor>
class HttpDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HttpDeadline(const Executor& ex) : timer_(ex) {}

  // The owner is told if what is under way has not finished by now + `d`.
  template <typename Owner>
  void After(Clock::duration d, HttpDeadlineFor what, const std::weak_ptr<Owner>& owner) {
    at_ = Clock::now() + d;
    what_ = what;
    if (!armed_ || at_ < timer_.expiry()) Arm(owner);
  }

  // The write it bounded finished: the deadline stays, but its passing is
  // no longer a write timeout.
  void WriteDone() { what_ = HttpDeadlineFor::kOther; }

  // No deadline (waiting for the router's answer, or a stream's next event).
  void Never() { at_ = Clock::time_point::max(); }

  void Cancel() { timer_.cancel(); }

 private:
  template <typename Owner>
  void Arm(const std::weak_ptr<Owner>& owner) {
    armed_ = true;
    timer_.expires_at(at_);  // cancels a wait already pending
    timer_.async_wait([this, owner](const boost::system::error_code& ec) {
      if (ec == boost::asio::error::operation_aborted) return;  // re-armed or closed
      // Alive owner: `this`, its member, is too.
      if (auto self = owner.lock()) Fired(self);
    });
  }

  template <typename Owner>
  void Fired(const std::shared_ptr<Owner>& self) {
    armed_ = false;
    if (at_ == Clock::time_point::max()) return;  // armed again when set
    if (Clock::now() >= at_) return self->OnDeadline(what_);
    Arm(std::weak_ptr<Owner>(self));
  }

  boost::asio::basic_waitable_timer<Clock, boost::asio::wait_traits<Clock>, Executor> timer_;
  bool armed_ = false;  // a wait is pending (or its handler queued)
  Clock::time_point at_ = Clock::time_point::max();
  HttpDeadlineFor what_ = HttpDeadlineFor::kOther;
};

// An answer's write did not finish within options.write_timeout: counts it
// (seqd_write_timeout_closes_total{interface="http"}), logs it at debug
// with the peer only (never the request's target, which may carry
// secrets), and makes the coming close of socket `fd` abortive (SO_LINGER
// 0: a reset), so the kernel drops the unsent bytes at once instead of
// offering them to a reader that does not read. The caller closes `fd`.
void HttpWriteTimedOut(HttpServer::Impl& server, std::string_view peer, int fd);

}  // namespace seqd
