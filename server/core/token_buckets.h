// Token buckets by name: each name may do `rate` things per second, with
// bursts of up to `burst`. The allocator keys them by token id to limit how
// many keys each token auto-creates (AllocatorOptions::auto_create_rate).
//
// Names come from the tokens file (plus "-" for the open principal), so the
// set is small; buckets that have refilled are dropped when the map grows
// past `max_buckets`, which changes nothing (a full bucket is a new one).
//
// Thread safety: every method is safe from any thread (one mutex); none
// blocks on I/O.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"

namespace seqd {

class TokenBuckets {
 public:
  // REQUIRES: rate > 0, burst >= 1.
  TokenBuckets(double rate, double burst, size_t max_buckets = 4096);

  // Takes one token of `name`'s bucket as of `now`: false if it is empty.
  bool TryTake(std::string_view name, Clock::TimePoint now) EXCLUDES(mu_);

  double rate() const { return rate_; }
  double burst() const { return burst_; }

 private:
  struct Bucket {
    double tokens = 0;
    Clock::TimePoint at{};  // when `tokens` was computed
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  // Adds what `b` (one of buckets_) earned since b.at (up to burst).
  void RefillLocked(Bucket& b, Clock::TimePoint now) const REQUIRES(mu_);

  const double rate_;
  const double burst_;
  const size_t max_buckets_;
  Mutex mu_;
  std::unordered_map<std::string, Bucket, Hash, std::equal_to<>> buckets_ GUARDED_BY(mu_);
};

}  // namespace seqd
