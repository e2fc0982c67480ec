// seqd::tools::Histogram (bench/seqbench/bench_histogram.h), seqbench's
// latency histogram: every value from 1 us to 10 s is reported within 1%,
// quantiles agree with a sorted copy of the values, Merge equals recording
// everything in one, and values past its range go to the max.
#include "bench_histogram.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using seqd::tools::Histogram;

namespace {

constexpr uint64_t kUs = 1000, kS = 1000 * 1000 * 1000;

double RelativeError(uint64_t got, uint64_t want) {
  return std::abs(static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(want);
}

// `n` values spread evenly in log scale over [lo, hi], from a fixed seed.
std::vector<uint64_t> LogUniform(size_t n, uint64_t lo, uint64_t hi, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(std::log(static_cast<double>(lo)),
                                                  std::log(static_cast<double>(hi)));
  std::vector<uint64_t> out(n);
  for (auto& v : out) v = static_cast<uint64_t>(std::exp(exponent(rng)));
  return out;
}

// The ceil(q * n)-th smallest value (the first for q = 0).
uint64_t Reference(std::vector<uint64_t> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

constexpr double kQuantiles[] = {0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1};

}  // namespace

TEST_CASE("every value from 1 us to 10 s is reported within 1%") {
  double worst = 0;
  // Every bucket edge (a power of two and the values around it) and a
  // dense log-uniform sweep in between.
  std::vector<uint64_t> values = LogUniform(200000, kUs, 10 * kS, 1);
  for (uint64_t p = kUs; p <= 10 * kS; p *= 2) {
    for (uint64_t v : {p - 1, p, p + 1, p + p / 64 - 1, p + p / 64, p + p / 128}) {
      values.push_back(v);
    }
  }
  for (uint64_t v : values) {
    const double e = RelativeError(Histogram::Representative(v), v);
    worst = std::max(worst, e);
    if (e > 0.01) FAIL_CHECK("value " << v << " ns reported as " << Histogram::Representative(v));
  }
  CHECK(worst <= 0.01);
  CHECK(worst > 0.005);  // the sweep reached a bucket's edge: the check can bite
  // Small values are exact.
  for (uint64_t v = 0; v < Histogram::kLinear; ++v) CHECK(Histogram::Representative(v) == v);
}

TEST_CASE("quantiles match a sorted copy of the values within 1%") {
  for (uint32_t seed : {2u, 3u, 4u}) {
    // A body around 50 us and a tail to 10 s, as a loaded server's.
    std::vector<uint64_t> values = LogUniform(100000, 20 * kUs, 200 * kUs, seed);
    const std::vector<uint64_t> tail = LogUniform(200, 1000 * kUs, 10 * kS, seed + 100);
    values.insert(values.end(), tail.begin(), tail.end());
    Histogram h;
    for (uint64_t v : values) h.Record(v);
    CHECK(h.count() == values.size());
    CHECK(h.max() == *std::max_element(values.begin(), values.end()));
    CHECK(h.min() == *std::min_element(values.begin(), values.end()));
    for (double q : kQuantiles) {
      const uint64_t want = Reference(values, q);
      INFO("q=" << q << " want " << want << " got " << h.Quantile(q));
      CHECK(RelativeError(h.Quantile(q), want) <= 0.01);
    }
  }
}

TEST_CASE("a quantile between two far-apart values is the right one") {
  Histogram h;
  for (int i = 0; i < 9990; ++i) h.Record(50 * kUs);
  for (int i = 0; i < 10; ++i) h.Record(3 * kS);
  CHECK(RelativeError(h.Quantile(0.999), 50 * kUs) <= 0.01);  // rank 9990
  CHECK(RelativeError(h.Quantile(0.9991), 3 * kS) <= 0.01);   // rank 9991
  CHECK(h.Quantile(1) == 3 * kS);
}

TEST_CASE("merging equals recording everything in one histogram") {
  const std::vector<uint64_t> values = LogUniform(50000, 1, 30 * kS, 5);
  Histogram all, parts[3];
  for (size_t i = 0; i < values.size(); ++i) {
    all.Record(values[i]);
    parts[i % 3].Record(values[i]);
  }
  Histogram merged;
  for (const Histogram& p : parts) merged.Merge(p);
  CHECK(merged.count() == all.count());
  CHECK(merged.max() == all.max());
  CHECK(merged.min() == all.min());
  CHECK(merged.mean() == doctest::Approx(all.mean()));
  for (double q : kQuantiles) CHECK(merged.Quantile(q) == all.Quantile(q));
  for (double q : kQuantiles) {
    CHECK(RelativeError(merged.Quantile(q), Reference(values, q)) <= 0.01);
  }
  Histogram empty;
  merged.Merge(empty);
  CHECK(merged.Quantile(0.5) == all.Quantile(0.5));
}

TEST_CASE("empty, and values past the range") {
  Histogram h;
  CHECK(h.Quantile(0.99) == 0);
  CHECK(h.max() == 0);
  CHECK(h.min() == 0);
  CHECK(h.mean() == 0);
  const uint64_t huge = uint64_t{1} << 50;  // past 2^40 ns: the last bucket
  h.Record(huge);
  h.Record(huge + 12345);
  h.Record(7);
  CHECK(h.Quantile(0) == 7);
  CHECK(h.Quantile(1) == huge + 12345);
  CHECK(h.Quantile(0.9) == huge + 12345);  // the overflow bucket reports the max
}
