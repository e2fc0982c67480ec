// The binary protocol front end (docs/protocol.md): accepts TCP connections
// on an io_context and serves, from the Services seam, PING and NEXT_IDS
// (ids), the message store ops (0x20-0x2B) and pushes (messages), and the
// snowflake ops (0x10-0x11; UNKNOWN_OPCODE while snowflake is not enabled).
// Every answer is counted in services.metrics.
//
// Each connection has its own strand. Requests are pipelined: every complete
// frame that has arrived is handled at once, and each response is sent when
// its request completes (in completion order, tagged with the request id).
// Responses are coalesced: at most one write per connection is in flight;
// whatever accumulates meanwhile goes out with the next one.
//
// Limits: at most max_in_flight requests per connection are unanswered (not
// yet written back); at that point the connection is not read until some
// are, nor while more than max_output_bytes of answers and pushes wait to be
// written. Protocol errors (bad length, version, flags) get one error frame, then
// the connection is closed. A connection with nothing in flight that sends
// nothing for idle_timeout is closed. Beyond max_connections new connections
// are closed at once. A connection with subscriptions is never idle.
//
// Push: SUBSCRIBE registers one MessageService subscription per conversation,
// owned by the connection and dropped when it closes. The listener (on a
// writer thread) encodes the push frame into a per-connection buffer under a
// mutex and posts a drain to the strand; it never blocks on the socket. If a
// push would take the connection's unsent bytes above max_output_bytes, it
// is discarded, every subscription of the connection is dropped and a
// PUSH_DROPPED frame follows the pushes already queued.
//
// Thread safety: all methods are safe from any thread. The io_context may be
// run by any number of threads; no handler blocks.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "common/error.h"
#include "proto/binary_codec.h"
#include "server/net/listener.h"
#include "server/net/listener_options.h"

namespace seqd {

struct Services;

// The listener's options (server/net/listener_options.h), and the binary
// protocol's own.
struct BinaryServerOptions : ListenerOptions {
  BinaryServerOptions() { port = 7070; }
  size_t max_in_flight = 1024;  // unanswered requests per connection (>= 1)
  // A frame must arrive whole within this of its first byte; 0 disables it.
  std::chrono::seconds request_timeout{10};
  size_t max_frame_bytes = proto::kMaxFrameSize;  // whole frame; never above kMaxFrameSize
  // Unsent answers and pushes per connection: reading pauses above it, and a
  // push that would pass it drops the connection's subscriptions. Never
  // below max_frame_bytes.
  size_t max_output_bytes = 4 << 20;
  // Unsent answers of one client address over all its connections, counted
  // while a write waits for the client; at or over it, the address's next
  // request closes its connection (RESOURCE_EXHAUSTED). 0: no cap.
  size_t max_unread_bytes_per_peer = 64 << 20;
  size_t max_subscriptions = 10000;  // conversations subscribed per connection
};

class BinaryServer : public Listener {
 public:
  // `io` and the objects `services` refers to must outlive the server and
  // every connection it serves: call Stop() and wait for `drained` (or stop
  // `io`) first, then shut the services down. (Stop() waits for requests
  // parked at the generator: at most its wait deadline.)
  BinaryServer(boost::asio::io_context& io, BinaryServerOptions options, const Services& services);
  ~BinaryServer() override;

  // Listener (server/net/listener.h).
  Status Listen() override;
  uint16_t port() const override;

  // Serves an already-connected stream socket, taking ownership of `fd`
  // (closed on failure). For socket activation and for tests that drive a
  // whole session over a socketpair (tests/fuzz/session_target.cc). Works
  // without Listen().
  Status Serve(int fd);

  // Closes connections with nothing in flight at once; lets requests in
  // flight be answered, then closes their connections.
  void Stop(std::function<void()> drained) override;
  size_t open_connections() const override;

  struct Impl;  // opaque; public only so the connection code can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace seqd
