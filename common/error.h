// Project-wide error values. Core code returns these instead of throwing.
//
// Thread safety: plain values, safe to copy across threads.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace seqd {

// One enum for every layer. HTTP and binary status tables map from it.
enum class ErrorCode {
  kInvalidArgument,     // malformed key, count out of range, bad step, ...
  kUnknownKey,          // key neither registered nor matched by an auto-create rule
  kKeyExists,           // create of a key that is already there
  kStoreUnavailable,    // database down, or buffers empty past the deadline
  kShuttingDown,        // server is draining
  kNotFound,            // no such message (or member) where one is required
  kFailedPrecondition,  // a rule refuses the change (read seq backwards, above max)
  kTooLarge,            // payload or list longer than its limit
  kNotServing,          // cannot issue now (no worker-id lease, clock moved back); retry later
  kWrongOwner,          // cluster mode: another instance owns the key's shard (not forwarded)
  kUnauthenticated,     // no credentials, or a token that matches none
  kPermissionDenied,    // the token's scopes do not allow this
  kResourceExhausted,   // a rate limit was hit (auto-created keys per token); retry later
  kMessageIdConflict,   // a send's client message id is stored with other content
  kInternal,            // anything else; message is never shown to clients
};

// Stable snake_case name used in API error bodies ("unknown_key").
std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;
};

inline Error MakeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

// A value or an Error. Minimal stand-in for std::expected (C++23).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(runtime/explicit)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(runtime/explicit)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !ok()
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace seqd
