#include "server/metrics/series.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace seqd {

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r,
                                                       const std::string& name,
                                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const std::string& name,
                                                   const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& r,
                                                           const std::string& name,
                                                           const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

prometheus::Counter& OneCounter(prometheus::Registry& r, const std::string& name,
                                const std::string& help) {
  return CounterFamily(r, name, help).Add({});
}

prometheus::Gauge& OneGauge(prometheus::Registry& r, const std::string& name,
                            const std::string& help) {
  return GaugeFamily(r, name, help).Add({});
}

prometheus::Histogram& OneHistogram(prometheus::Registry& r, const std::string& name,
                                    const std::string& help, const std::vector<double>& buckets) {
  return HistogramFamily(r, name, help).Add({}, buckets);
}

void CatchUp(prometheus::Counter* c, int64_t total) {
  const double delta = static_cast<double>(total) - c->Value();
  if (delta > 0) c->Increment(delta);
}

}  // namespace seqd
