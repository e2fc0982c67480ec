#include "server/net/unread_bytes.h"

#include <algorithm>

namespace seqd {

bool UnreadBytes::Over(const std::string& peer) const {
  // No address can be over while all of them together are under.
  if (limit_ == 0 || total_.load(std::memory_order_relaxed) < limit_) return false;
  return of(peer) >= limit_;
}

void UnreadBytes::Add(const std::string& peer, size_t bytes) {
  if (bytes == 0) return;
  MutexLock lock(mu_);
  by_peer_[peer] += bytes;
  total_.fetch_add(bytes, std::memory_order_relaxed);
}

void UnreadBytes::Remove(const std::string& peer, size_t bytes) {
  if (bytes == 0) return;
  MutexLock lock(mu_);
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) return;  // an unmatched Remove: nothing to undo
  const size_t n = std::min(bytes, it->second);
  total_.fetch_sub(n, std::memory_order_relaxed);
  if ((it->second -= n) == 0) by_peer_.erase(it);
}

size_t UnreadBytes::of(const std::string& peer) const {
  MutexLock lock(mu_);
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? 0 : it->second;
}

}  // namespace seqd
