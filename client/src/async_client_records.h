// The records AsyncClient::Impl (async_client_impl.h) keeps: a user call
// across its attempts, a connection with its buffers and calls in flight,
// an endpoint with its failover state. Internal to the client library.
//
// Thread safety: none; every record is read and written on the client's
// strand only (see async_client_impl.h).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "proto/binary_codec.h"
#include "seqd/client.h"

namespace seqd::client {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace detail {

// Largest key the frame can carry (u16 length); the server's own rules are
// stricter and answered as INVALID_ARGUMENT.
inline constexpr size_t kMaxKeyBytes = 0xFFFF;

// Whether a call that failed with `code` may try again (another attempt,
// after a backoff, on the next endpoint).
inline bool Retryable(StatusCode code) {
  return code == StatusCode::kTimeout || code == StatusCode::kUnavailable ||
         code == StatusCode::kStoreUnavailable || code == StatusCode::kShuttingDown ||
         code == StatusCode::kNotServing;
}

// kRaw: any op sent as opcode + payload whose OK result a typed wrapper
// decodes (the message store and snowflake ops).
enum class Op { kNextIds, kPing, kRaw };

// A subscriber's callbacks, shared by the conversations it subscribed.
struct SubHandlers {
  AsyncClient::MessageFn on_message;
  AsyncClient::LostFn on_lost;
};

struct Connection;

// One user call, across its attempts.
struct Call {
  explicit Call(const asio::any_io_executor& ex) : timer(ex) {}

  uint64_t seq = 0;
  Op op = Op::kNextIds;
  std::string key;
  uint32_t count = 0;
  std::string on_behalf_of;  // NEXT_IDS's optional trailer
  std::function<void(ClientResult<IdBatch>)> on_ids;
  std::function<void(ClientResult<std::chrono::microseconds>)> on_ping;
  // Op::kRaw: the request payload, and the raw OK result (decoded by the
  // typed wrapper).
  proto::Opcode opcode = proto::Opcode::kPing;
  std::string body;
  std::function<void(ClientResult<std::string>)> on_raw;
  int preferred_endpoint = -1;  // where the first attempt goes, if >= 0
  // Cluster mode (ClientOptions::route_by_shard): the key whose owner the
  // call may go to ("" for calls not routed by key), and whether this
  // attempt went there with NO_FORWARD.
  std::string route_key;
  bool routed = false;
  std::vector<std::string> sub_convs;  // SUBSCRIBE: registered on success
  std::shared_ptr<SubHandlers> sub_handlers;

  // One timer: the attempt's deadline while in flight, the backoff between attempts.
  asio::steady_timer timer;
  uint64_t timer_gen = 0;  // bumped to disarm a handler already queued

  int attempt = 0;
  // ClientOptions::call_deadline: when the whole call ends; max() if none.
  Clock::time_point deadline = Clock::time_point::max();
  std::chrono::milliseconds attempt_timeout{0};  // this attempt's: call_timeout or less
  std::string last_error;                        // with a call_deadline: the last attempt's error
  int endpoint = -1;
  std::shared_ptr<Connection> conn;  // the attempt's connection; null between attempts
  bool sent = false;                 // in conn->pending (else queued in conn->waiting)
  uint32_t request_id = 0;
  Clock::time_point sent_at;
  bool done = false;
};

struct Connection {
  Connection(const asio::any_io_executor& ex, int ep)
      : socket(ex), resolver(ex), connect_timer(ex), endpoint(ep) {}

  tcp::socket socket;
  // With ClientOptions::tls: the TLS stream over `socket`, handshaken before
  // the connection is kOpen; every read and write goes through it. Null on
  // plain connections (their I/O uses `socket` directly).
  std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
  tcp::resolver resolver;
  asio::steady_timer connect_timer;
  int endpoint;
  enum class State { kConnecting, kOpen, kClosed } state = State::kConnecting;
  bool connect_timed_out = false;

  std::string out;      // frames not yet handed to the socket
  std::string writing;  // the frames of the write in flight
  bool write_in_flight = false;

  std::vector<char> in;  // received bytes in [in_begin, in_end)
  size_t in_begin = 0;
  size_t in_end = 0;
  Clock::time_point last_read{};
  bool answered = false;  // a frame came back on it (see HandleFrame)

  std::unordered_map<uint32_t, std::shared_ptr<Call>> pending;
  // Calls beyond max_in_flight_per_connection. Entries whose call moved on
  // (timed out, finished, or already sent) are skipped when popped.
  std::deque<std::shared_ptr<Call>> waiting;
  uint32_t next_request_id = 1;
  // ClientOptions::placement_version: the version this connection was told.
  int64_t told_placement = 0;
};

struct Endpoint {
  std::string host;
  std::string port;
  std::string name;  // as given
  Clock::time_point down_until{};
  int failures = 0;
  std::shared_ptr<Connection> conn;  // the connection new calls use
};

}  // namespace detail
}  // namespace seqd::client
