// HTTP/1.1 front end: accepts connections on an io_context and feeds each
// request to an ApiRouter. Modeled on Beast's advanced server example: one
// strand per connection, one request at a time per connection, keep-alive.
//
// Limits: oversized header -> 431, oversized body -> 413, malformed request
// -> 400 (each followed by close); a connection that sends nothing for
// idle_timeout (or trickles a request slower than that) is dropped, and so
// is one that does not take an answer (or one write of an event stream)
// whole within write_timeout; beyond max_connections new connections get
// 503 and are closed.
//
// Thread safety: all methods are safe from any thread. The io_context may be
// run by any number of threads (by one only with
// HttpOptions::single_threaded); no handler blocks.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "server/net/listener.h"
#include "server/net/listener_options.h"

namespace seqd {

class ApiRouter;

// The listener's options (server/net/listener_options.h), and HTTP's own.
// write_timeout runs from the start of an answer's write to its last byte
// taken by the client (absolute: a trickling reader does not extend it);
// then the connection is reset and counted. It must be positive.
struct HttpOptions : ListenerOptions {
  HttpOptions() {
    port = 8080;
    idle_timeout = std::chrono::seconds(30);
  }
  size_t max_header_bytes = 8192;
  size_t max_body_bytes = 65536;
  // Bytes of answers one client IP has not read (over all its connections;
  // server/net/unread_bytes.h); at or over it, its requests get 429 and a
  // close. 0: no cap.
  size_t max_unread_bytes_per_peer = 64 << 20;
  // True only if exactly one thread runs each io_context a connection runs
  // on (the server's, or each of `connections`): connections then skip
  // their strands (that thread serializes them already).
  bool single_threaded = false;
};

class HttpServer : public Listener {
 public:
  // Answers the server gives itself (malformed requests, too many
  // connections) are counted in router.services().metrics; the router
  // counts the rest. `io` and `router` must outlive the server and every
  // connection it serves: call Stop() and wait for `drained` (or stop `io`)
  // first.
  HttpServer(boost::asio::io_context& io, HttpOptions options, ApiRouter& router);
  ~HttpServer() override;

  // Listener (server/net/listener.h).
  Status Listen() override;
  uint16_t port() const override;

  // Closes idle connections at once; lets requests in flight finish and
  // write their response, then closes them. Call once.
  void Stop(std::function<void()> drained) override;
  size_t open_connections() const override;

  struct Impl;  // what the sessions share (http_session.h); public so they can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace seqd
