// seqbench's latency histogram. Not thread-safe: one per connection, merged
// at the end.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace seqd::tools {

// Log-linear histogram of nanoseconds: 32 sub-buckets per power of two.
class Histogram {
 public:
  Histogram() : buckets_(64 + 59 * 32, 0) {}
  void Record(uint64_t ns) {
    ++buckets_[Index(ns)];
    ++count_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }
  void Merge(const Histogram& o) {
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    max_ = std::max(max_, o.max_);
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  // The value at quantile q (0..1): the middle of its bucket.
  uint64_t Quantile(double q) const {
    if (count_ == 0) return 0;
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * count_ + 0.5));
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::min(Middle(i), max_);
    }
    return max_;
  }

 private:
  static size_t Index(uint64_t v) {
    if (v < 64) return v;
    const int msb = 63 - std::countl_zero(v);
    const int shift = msb - 5;
    return 64 + static_cast<size_t>(shift - 1) * 32 + ((v >> shift) - 32);
  }
  static uint64_t Middle(size_t i) {
    if (i < 64) return i;
    const size_t shift = (i - 64) / 32 + 1;
    const uint64_t top = (i - 64) % 32 + 32;
    return (top << shift) + (uint64_t{1} << shift) / 2;
  }
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0, sum_ = 0, max_ = 0;
};

}  // namespace seqd::tools
