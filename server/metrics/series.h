// What the metrics files share: registering a family, or a family that has
// a single series, and raising a counter to a total read at scrape time. Also names
// the prometheus classes that the metrics headers hold pointers to.
//
// Thread safety: registering is as safe as prometheus::Registry (it locks).
// CatchUp on one counter must not run on two threads at once (the callers
// run it under their scrape lock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace seqd {

// Registers family `name` in `r` and returns it (owned by `r`), for series
// to be added by their labels.
prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r,
                                                       const std::string& name,
                                                       const std::string& help);
prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const std::string& name,
                                                   const std::string& help);
prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& r,
                                                           const std::string& name,
                                                           const std::string& help);

// Registers family `name` in `r` with a single series, without labels, and
// returns that series (owned by `r`).
prometheus::Counter& OneCounter(prometheus::Registry& r, const std::string& name,
                                const std::string& help);
prometheus::Gauge& OneGauge(prometheus::Registry& r, const std::string& name,
                            const std::string& help);
prometheus::Histogram& OneHistogram(prometheus::Registry& r, const std::string& name,
                                    const std::string& help, const std::vector<double>& buckets);

// Raises `c` to `total`, a total kept elsewhere (a counter never goes down).
void CatchUp(prometheus::Counter* c, int64_t total);

}  // namespace seqd
