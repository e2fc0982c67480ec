// Metrics of dense keys (server/core/dense_allocator.h; names:
// docs/metrics.md). Read from the allocator's totals at scrape time.
//
//   seqd_dense_blocks_total          counter: blocks answered
//   seqd_dense_transactions_total    counter: store transactions run
//   seqd_dense_replayed_total        counter: blocks answered again for a retried token
//   seqd_dense_failures_total        counter: requests answered with a store error
//   seqd_dense_waiting_requests      gauge: requests waiting for a transaction
//
// Thread safety: Update() is called by Metrics::Render under its lock; not
// safe to call from two threads at once.
#pragma once

#include <cstdint>

#include "server/metrics/series.h"

namespace seqd {

// The dense allocator's totals since the start, as Update() takes them.
struct DenseGauges {
  int64_t blocks = 0;
  int64_t transactions = 0;
  int64_t replayed = 0;
  int64_t failures = 0;
  int64_t waiting = 0;
};

class DenseMetrics {
 public:
  // Registers the series in `registry`, which must outlive this.
  explicit DenseMetrics(prometheus::Registry& registry);

  // Raises the counters to the totals in `g` (never lowers them) and sets
  // the gauge.
  void Update(const DenseGauges& g);

 private:
  prometheus::Counter* blocks_;
  prometheus::Counter* transactions_;
  prometheus::Counter* replayed_;
  prometheus::Counter* failures_;
  prometheus::Gauge* waiting_;
};

}  // namespace seqd
