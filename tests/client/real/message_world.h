// The real message server for the client tests, behind an interface that
// names no server type: the server's and the client's headers both define
// seqd::IdRange and friends, so they never meet in one translation unit.
#pragma once

#include <cstdint>
#include <memory>

namespace seqd::clienttest {

// A BinaryServer on 127.0.0.1 (ephemeral port) over a real MessageService
// on a MemoryMessageStore. Stops (drains) when destroyed.
class MessageWorld {
 public:
  MessageWorld();
  ~MessageWorld();
  uint16_t port() const;
  // The next `n` appends store their messages, then fail with
  // STORE_UNAVAILABLE (a COMMIT whose outcome was lost, though it committed).
  void LoseNextCommits(int n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seqd::clienttest
