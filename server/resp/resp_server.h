// Redis-protocol (RESP2) front end: lets redis-cli, redis-benchmark and any
// Redis client library take IDs with INCR / INCRBY.
//
// Commands (names are case-insensitive):
//   INCR key        -> :id        the next ID of `key`
//   INCRBY key n    -> :last      a contiguous block of n IDs (1..max_count);
//                                 the caller owns (last-n, last], as in Redis
//   GET key         -> $max       the largest ID of `key` handed out (MAX_IDS),
//                                 nil ($-1) when none was (0: no row)
//   MGET key...     -> *n of $max or nil, in the order asked (at most 1000)
//   SEQD.MINSEQ key...        -> *n of :min_seq (0 if never set)
//   SEQD.SETMINSEQ key v...   -> +OK once every min seq (>= 0) is durable
//   PING [msg]      -> +PONG or $msg
//   QUIT            -> +OK, then the connection closes
//   COMMAND ...     -> *0 (empty; redis-cli and redis-benchmark ask for it)
//   CONFIG GET p... -> save "" / appendonly "no" pairs, nothing for other
//                      names (redis-benchmark reads those two at start)
//   anything else   -> -ERR unknown command 'X' (HELLO included: no RESP3)
// Errors are "-ERR ..." with a fixed, client-safe text: unknown key,
// invalid key, store unavailable, shutting down. A protocol error is
// answered with "-ERR Protocol error: ..." and the connection closes.
//
// INCRBY contiguity: the block is one contiguous range from one segment
// (a contiguous take, SegmentAllocator::Take): the rest of a segment too short for it is
// skipped, never handed out.
//
// Pipelining: replies go out in request order. A connection has at most
// max_in_flight unanswered commands; beyond that (or when the client does not
// read its replies) the server stops reading from it. Consecutive INCRs of
// the same key that arrive together are served by one allocator call.
//
// Metrics (services.metrics): seqd_requests_total{interface="resp"} by op
// (incr, incrby, ping, max_ids, min_seqs, other) and status (ok or the error code name; client
// mistakes such as arity, unknown commands and protocol errors are
// invalid_argument), from cached counters: an INCR run is one add. The
// duration histogram gets one observation per allocator call (an INCR run
// or an INCRBY) and per other command, timed from the read that brought it.
//
// A connection idle (nothing received, nothing in flight) for idle_timeout is
// closed; beyond max_connections new ones get an error and are closed.
//
// Thread safety: all methods are safe from any thread. The io_context may be
// run by any number of threads; no handler blocks.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "server/net/listener.h"
#include "server/net/listener_options.h"

namespace seqd {

struct Services;

// The listener's options (server/net/listener_options.h), and RESP's own.
struct RespServerOptions : ListenerOptions {
  size_t max_in_flight = 1024;  // unanswered commands per connection
  // A command must arrive whole within this of its first byte; 0 disables it.
  std::chrono::seconds request_timeout{10};
};

class RespServer : public Listener {
 public:
  // Serves INCR/INCRBY from services.ids and counts in services.metrics.
  // `io` and the objects `services` refers to must outlive the server and
  // every connection it serves: call Stop() and wait for `drained` (or stop
  // `io`) first.
  RespServer(boost::asio::io_context& io, RespServerOptions options, const Services& services);
  ~RespServer() override;

  // Listener (server/net/listener.h).
  Status Listen() override;
  uint16_t port() const override;

  // Also stops reading. Idle connections close now; the others answer the
  // commands already read, then close.
  void Stop(std::function<void()> drained) override;
  size_t open_connections() const override;

  struct Impl;  // what the sessions share (resp_session.h); public so they can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace seqd
