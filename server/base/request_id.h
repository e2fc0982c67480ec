// The ids that tie a request's answer to its log lines
// (docs/operations.md, "Request ids and traces"): the client's own
// X-Request-Id when it is acceptable, else one made here that no other
// instance or restart makes; and the trace id of a W3C traceparent.
//
// Thread safety: RequestId and TraceId are values (held inline: no
// allocation); RequestIdGenerator::Next() is safe from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace seqd {

class RequestId {
 public:
  static constexpr size_t kMaxSize = 128;

  // `text` if it is 1..kMaxSize characters of [A-Za-z0-9._:-] (so it can
  // be echoed in a header, a JSON string and a log line as it is); else
  // nullopt.
  static std::optional<RequestId> FromHeader(std::string_view text);

  // Copies the id's characters, not the whole buffer: an id is copied a
  // few times per request, and most (ours too) fit kShort.
  RequestId() = default;
  RequestId(const RequestId& other) noexcept { CopyFrom(other); }
  RequestId& operator=(const RequestId& other) noexcept {
    if (this != &other) CopyFrom(other);
    return *this;
  }

  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_, size_}; }

 private:
  friend class RequestIdGenerator;
  static constexpr size_t kShort = 32;
  void CopyFrom(const RequestId& other) {
    size_ = other.size_;
    // A fixed size compiles to a few moves; bytes past size_ are never read.
    std::memcpy(data_, other.data_, size_ <= kShort ? kShort : kMaxSize);
  }
  uint8_t size_ = 0;
  char data_[kMaxSize];  // only the first size_ are ever read
};

class TraceId {
 public:
  // The trace id of a W3C Trace Context `traceparent` value
  // ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lowercase
  // hex, neither id all zeros; a later version may append "-..." after
  // those 55 characters, version ff is invalid); nullopt if `header` is
  // not that.
  static std::optional<TraceId> FromTraceparent(std::string_view header);

  bool empty() const { return !set_; }
  std::string_view view() const { return set_ ? std::string_view(hex_, sizeof hex_) : ""; }

 private:
  bool set_ = false;
  char hex_[32] = {};
};

// What one request's log lines carry. Empty for a request that has none
// (the binary and RESP protocols have no header to carry them).
struct RequestIds {
  RequestId request;
  TraceId trace;
};

// Makes ids "<prefix>-<counter>": the prefix is 16 hex digits of 64 random
// bits drawn once per generator (std::random_device), the counter is in
// hex. A thread takes counter values from the shared counter in blocks, so
// an id costs a thread-local increment and a few digits.
class RequestIdGenerator {
 public:
  RequestIdGenerator();
  explicit RequestIdGenerator(uint64_t prefix);  // tests
  RequestIdGenerator(const RequestIdGenerator&) = delete;
  RequestIdGenerator& operator=(const RequestIdGenerator&) = delete;

  RequestId Next();
  std::string_view prefix() const { return {prefix_, sizeof prefix_}; }

  // The process's generator.
  static RequestIdGenerator& Process();

 private:
  char prefix_[16];
  const uint64_t serial_;  // tells generators apart in the threads' caches
  std::atomic<uint64_t> next_block_{0};
};

}  // namespace seqd
