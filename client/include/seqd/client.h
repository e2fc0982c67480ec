// seqd client library: IDs over the seqd binary protocol (docs/protocol.md).
//
// Two APIs over one implementation:
//   - AsyncClient runs on an executor you provide (e.g. your io_context) and
//     reports results through callbacks.
//   - Client is blocking; it runs its own io_context thread and may be called
//     from many threads at once.
//
// Both pipeline many requests on one TCP connection per endpoint (responses
// are matched by request id), time out each attempt after call_timeout, and
// retry calls that failed on connection loss, timeout, STORE_UNAVAILABLE or
// SHUTTING_DOWN on the next endpoint, with exponential backoff and jitter, up
// to max_attempts. Retrying NEXT_IDS is safe: at worst the IDs of a lost
// answer are skipped, never handed out twice. Errors the server answers
// about the request itself (INVALID_ARGUMENT, UNKNOWN_KEY, ...) are not
// retried.
//
// Endpoint choice: each client starts at a round-robin position among
// `endpoints` (so clients in one process spread over the servers) and sticks
// to one endpoint while it works, so one client's IDs of a key come from one
// server and increase. A connection failure marks its endpoint down for a
// backoff (doubling per consecutive failure, up to backoff_max) and calls
// move on to the next endpoint in order. If every endpoint is down, the one
// whose backoff ends first is tried anyway.
//
// Local prefetch (ClientOptions::prefetch > 0, as Tinyid's client does): a
// NextIds(key, 1) / NextId(key) is served from a batch of `prefetch` IDs held
// in the client, fetched with one request and refilled in the background
// once half of it is used. This saves round trips but trades strict ordering
// across clients: two clients hold interleaved batches, so an ID handed out
// later by one client may be smaller than an ID handed out earlier by
// another. IDs stay unique; IDs still held when the client is closed are
// never used. Calls with count > 1 always go to the server.
//
// Thread safety: all public member functions of AsyncClient and Client may be
// called from any thread concurrently. AsyncClient callbacks run on an
// internal strand of the executor, never inside the calling function; do not
// block in them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

namespace seqd {

// Status codes: 0-66 mirror the binary protocol's codes; 100 and above are
// produced by the client itself.
enum class StatusCode : uint16_t {
  kOk = 0,
  kInvalidArgument = 1,
  kUnknownKey = 2,
  kKeyExists = 3,
  kStoreUnavailable = 4,
  kShuttingDown = 5,
  kInternal = 6,
  kUnknownOpcode = 7,
  kMalformedFrame = 64,
  kUnsupportedVersion = 65,
  kFrameTooLarge = 66,
  kTimeout = 100,      // no answer within call_timeout (on the last attempt)
  kUnavailable = 101,  // no endpoint reachable / connection lost
  kProtocol = 102,     // the server sent something that is not the protocol
  kCancelled = 103,    // the client was closed before the call completed
};

// "OK", "INVALID_ARGUMENT", ..., "TIMEOUT", "UNAVAILABLE", "PROTOCOL", "CANCELLED".
std::string_view StatusCodeName(StatusCode code);

template <typename T>
class ClientResult {
 public:
  ClientResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit OK
  ClientResult(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  // Empty when ok().
  const std::string& message() const { return message_; }
  // "UNKNOWN_KEY: unknown key 'x'"; "OK" when ok().
  std::string ToString() const {
    std::string s(StatusCodeName(code_));
    if (!message_.empty()) s += ": " + message_;
    return s;
  }

  // REQUIRES: ok() (throws std::logic_error otherwise).
  T& value() {
    Check();
    return *value_;
  }
  const T& value() const {
    Check();
    return *value_;
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!value_) throw std::logic_error("ClientResult::value() on error " + ToString());
  }
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::optional<T> value_;
};

// IDs first..last, both included.
struct IdRange {
  int64_t first = 0;
  int64_t last = 0;
  uint64_t size() const { return static_cast<uint64_t>(last - first) + 1; }
  bool operator==(const IdRange&) const = default;
};

// The IDs of one NextIds call: contiguous ranges in increasing order.
struct IdBatch {
  std::vector<IdRange> ranges;
  uint64_t count() const {
    uint64_t n = 0;
    for (const IdRange& r : ranges) n += r.size();
    return n;
  }
  // Every ID, expanded.
  std::vector<int64_t> ids() const {
    std::vector<int64_t> out;
    out.reserve(count());
    for (const IdRange& r : ranges) {
      for (int64_t id = r.first;; ++id) {
        out.push_back(id);
        if (id == r.last) break;
      }
    }
    return out;
  }
};

struct ClientOptions {
  std::vector<std::string> endpoints;               // "host:port" or "[v6addr]:port"
  std::chrono::milliseconds connect_timeout{1000};  // resolve + connect, per attempt
  std::chrono::milliseconds call_timeout{1000};     // per attempt
  int max_attempts = 3;                             // attempts per call, >= 1
  std::chrono::milliseconds backoff_initial{20};    // first retry delay (jittered)
  std::chrono::milliseconds backoff_max{1000};      // cap of retry delay and endpoint down time
  size_t prefetch = 0;                              // local prefetch batch size per key, 0 = off
  size_t max_in_flight_per_connection = 1024;       // more calls wait in the client
};

// Throws std::invalid_argument for empty or malformed endpoints or option
// values out of range.
class AsyncClient {
 public:
  AsyncClient(boost::asio::any_io_executor executor, ClientOptions options);
  // Close()s. Callbacks of calls still pending run later on the executor
  // with kCancelled (if it still runs).
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  // `count` IDs of `key` (1 to the server's max_count). `done` runs exactly
  // once, on the executor.
  void NextIds(std::string key, uint32_t count, std::function<void(ClientResult<IdBatch>)> done);
  // A PING round trip; the result is the round-trip time of the answered attempt.
  void Ping(std::function<void(ClientResult<std::chrono::microseconds>)> done);
  // Closes connections; pending and later calls complete with kCancelled.
  void Close();

  const ClientOptions& options() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Blocking client with its own I/O thread.
class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  ClientResult<IdBatch> NextIds(const std::string& key, uint32_t count = 1);
  ClientResult<int64_t> NextId(const std::string& key);
  ClientResult<std::chrono::microseconds> Ping();

  AsyncClient& async();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "host:port" or "[v6]:port" (port 1..65535) into its parts; false if
// malformed (a bare IPv6 address needs brackets).
bool SplitEndpoint(const std::string& s, std::string& host, std::string& port);

}  // namespace seqd
