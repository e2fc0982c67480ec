// The io_contexts a server's connections are spread over: one per network
// thread, each run by exactly that thread, so a connection's reads, writes
// and handlers stay on one thread (one epoll set per thread; no wake-up of
// another thread to run a handler, as one io_context shared by several
// threads does). The listeners accept on their own io_context and bind each
// accepted socket to Next(), round-robin.
//
// Thread safety: Next() is safe from any thread. The contexts are not
// owned: they must outlive the ring and every socket bound to them.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <vector>

namespace seqd {

class IoRing {
 public:
  // Precondition: `contexts` is not empty and holds no null.
  explicit IoRing(std::vector<boost::asio::io_context*> contexts)
      : contexts_(std::move(contexts)) {}
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  // The context for the next connection (round-robin over all of them).
  boost::asio::io_context& Next() {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    return *contexts_[i % contexts_.size()];
  }

  size_t size() const { return contexts_.size(); }

 private:
  const std::vector<boost::asio::io_context*> contexts_;
  std::atomic<size_t> next_{0};
};

}  // namespace seqd
