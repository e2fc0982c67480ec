#include "server/core/token_buckets.h"

#include <algorithm>

namespace seqd {

TokenBuckets::TokenBuckets(double rate, double burst, size_t max_buckets)
    : rate_(rate), burst_(burst), max_buckets_(max_buckets) {}

void TokenBuckets::RefillLocked(Bucket& b, Clock::TimePoint now) const {
  if (now <= b.at) return;
  const double earned = std::chrono::duration<double>(now - b.at).count() * rate_;
  b.tokens = std::min(burst_, b.tokens + earned);
  b.at = now;
}

bool TokenBuckets::TryTake(std::string_view name, Clock::TimePoint now) {
  MutexLock lock(mu_);
  auto it = buckets_.find(name);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_buckets_) {
      for (auto b = buckets_.begin(); b != buckets_.end();) {
        RefillLocked(b->second, now);
        b = b->second.tokens >= burst_ ? buckets_.erase(b) : std::next(b);
      }
    }
    it = buckets_.emplace(std::string(name), Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  RefillLocked(b, now);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace seqd
