// Bytes of answers a client address has been given but not yet read: what
// its connections hold in their own buffers because the sockets would not
// take more. A client that stops reading (slowhttptest's slow read) makes
// the server hold every answer it asks for; with a limit per address, its
// further requests are refused before they are built, so it can pin at
// most `limit` bytes (plus one answer per connection) and no more of the
// CPU it takes to build them.
//
// Thread safety: every method is safe from any thread. Over() takes no lock
// while the total of all addresses is under the limit (the usual case); the
// rest take one mutex, and only for writes the socket did not take at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <unordered_map>

#include "common/mutex.h"

namespace seqd {

class UnreadBytes {
 public:
  // `limit`: bytes per address; 0: no limit (Over() is always false).
  explicit UnreadBytes(size_t limit) : limit_(limit) {}
  UnreadBytes(const UnreadBytes&) = delete;
  UnreadBytes& operator=(const UnreadBytes&) = delete;

  // True if `peer` (an IP address) has `limit` bytes or more unread.
  bool Over(const std::string& peer) const EXCLUDES(mu_);

  // `peer` was given `bytes` more that it has not read yet. Every Add is
  // matched by a Remove of the same bytes once they are written or dropped.
  void Add(const std::string& peer, size_t bytes) EXCLUDES(mu_);
  void Remove(const std::string& peer, size_t bytes) EXCLUDES(mu_);

  // Unread bytes of `peer`, and of every address together.
  size_t of(const std::string& peer) const EXCLUDES(mu_);
  size_t total() const { return total_.load(std::memory_order_relaxed); }

 private:
  const size_t limit_;
  std::atomic<size_t> total_{0};
  mutable Mutex mu_;
  std::unordered_map<std::string, size_t> by_peer_ GUARDED_BY(mu_);
};

// One connection's part of an UnreadBytes: what it added and has not
// removed yet, all removed by Settle() or when it is destroyed.
// Thread safety: one connection's, touched by one thread at a time (its
// strand); `all` must outlive it.
class UnreadShare {
 public:
  explicit UnreadShare(UnreadBytes& all) : all_(all) {}
  ~UnreadShare() { Settle(); }
  UnreadShare(const UnreadShare&) = delete;
  UnreadShare& operator=(const UnreadShare&) = delete;

  // The client's address; call before the first Owe().
  void set_peer(std::string peer) { peer_ = std::move(peer); }
  // True if the client's address is at or over its limit.
  bool Over() const { return all_.Over(peer_); }
  // `bytes` more were given to the client and are not read yet.
  void Owe(size_t bytes) {
    all_.Add(peer_, bytes);
    owed_ += bytes;
  }
  // Exactly `bytes` are given and not read now, more or fewer than before.
  void OweExactly(size_t bytes) {
    if (bytes > owed_) return Owe(bytes - owed_);
    if (bytes == owed_) return;
    all_.Remove(peer_, owed_ - bytes);
    owed_ = bytes;
  }
  // Everything owed was written (or will never be).
  void Settle() {
    all_.Remove(peer_, owed_);
    owed_ = 0;
  }

 private:
  UnreadBytes& all_;
  std::string peer_;
  size_t owed_ = 0;
};

}  // namespace seqd
