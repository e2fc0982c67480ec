// seqbench's latency histogram: log-linear (HdrHistogram-style) over
// nanoseconds. Values below 128 ns have a bucket each; above, every power of
// two is cut into 64 equal buckets, so a bucket is at most 1/64 of its
// values wide and the value reported for it (its middle) is within 1/128
// (0.78%) of every value in it. Exact to 2^40 ns (about 18 minutes); larger
// values share the last bucket, which reports the largest value seen.
// Fixed memory (kBuckets counters, about 18 KB), whatever the values.
//
// Thread safety: none. One histogram per connection (or thread), merged
// once they are done (Merge is exact: the merged histogram is the one that
// would have recorded every value).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace seqd::tools {

class Histogram {
 public:
  static constexpr int kSubBits = 6;                            // 64 buckets per power of two
  static constexpr uint64_t kLinear = uint64_t{2} << kSubBits;  // 128: exact below
  static constexpr int kTopBit = 40;                            // exact below 2^40 ns
  static constexpr size_t kBuckets =
      kLinear + static_cast<size_t>(kTopBit - kSubBits - 1) * (kLinear / 2) + 1;

  Histogram() : buckets_(kBuckets, 0) {}

  void Record(uint64_t ns) {
    ++buckets_[Index(ns)];
    ++count_;
    sum_ += ns;
    max_ = std::max(max_, ns);
    min_ = std::min(min_, ns);
  }
  void Merge(const Histogram& o) {
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }

  // The value at quantile q (0..1): of the values recorded in order, the
  // ceil(q * count)-th (the first for q = 0), as its bucket's middle (kept
  // within [min, max]); within 1% of that value below 2^40 ns. 0 if empty.
  uint64_t Quantile(double q) const {
    if (count_ == 0) return 0;
    const double want = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_));
    const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(want), 1, count_);
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::clamp(Middle(i), min_, max_);
    }
    return max_;
  }

  // The value Quantile reports for a bucket holding `ns` alone, before the
  // [min, max] clamp: what the 1% bound is about.
  static uint64_t Representative(uint64_t ns) { return Middle(Index(ns)); }

 private:
  static size_t Index(uint64_t v) {
    if (v < kLinear) return static_cast<size_t>(v);
    const int msb = 63 - std::countl_zero(v);
    if (msb >= kTopBit) return kBuckets - 1;
    const int shift = msb - kSubBits;  // >= 1
    return static_cast<size_t>(kLinear + static_cast<uint64_t>(shift - 1) * (kLinear / 2) +
                               ((v >> shift) - kLinear / 2));
  }
  static uint64_t Middle(size_t i) {
    if (i < kLinear) return i;
    if (i == kBuckets - 1) return std::numeric_limits<uint64_t>::max();  // clamped to max
    const size_t shift = (i - kLinear) / (kLinear / 2) + 1;
    const uint64_t top = (i - kLinear) % (kLinear / 2) + kLinear / 2;
    return (top << shift) + (uint64_t{1} << shift) / 2;
  }

  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0, sum_ = 0, max_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
};

}  // namespace seqd::tools
