// The real snowflake server for the client tests, behind an interface that
// names no server type (see message_world.h for why).
#pragma once

#include <cstdint>
#include <memory>

namespace seqd::clienttest {

// A BinaryServer on 127.0.0.1 (ephemeral port) over a real
// SnowflakeGenerator with Leaf's layout, on manual clocks that stand still:
// 4096 IDs can be issued before a request would wait for a millisecond that
// never comes. It issues nothing until Grant(). Stops (drains) when
// destroyed.
//
// Thread safety: the methods may be called from the test thread while the
// server runs.
class SnowflakeWorld {
 public:
  static constexpr int64_t kNowMs = 1795360448589;  // the wall clock's time
  static constexpr int64_t kMaxCount = 1000;        // IDs per request

  SnowflakeWorld();
  ~SnowflakeWorld();
  uint16_t port() const;
  // Serve as `worker` from now on.
  void Grant(int worker);
  // Stop serving (NOT_SERVING with `why`).
  void Revoke(const char* why);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seqd::clienttest
