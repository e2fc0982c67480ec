#include "server/metrics/dense_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "server/metrics/series.h"

namespace seqd {

DenseMetrics::DenseMetrics(prometheus::Registry& r)
    : blocks_(&OneCounter(r, "seqd_dense_blocks_total", "Blocks of dense keys answered")),
      transactions_(
          &OneCounter(r, "seqd_dense_transactions_total", "Store transactions run for dense keys")),
      replayed_(&OneCounter(r, "seqd_dense_replayed_total",
                            "Blocks of dense keys answered again for a retried token")),
      failures_(&OneCounter(r, "seqd_dense_failures_total",
                            "Requests for dense keys answered with a store error")),
      waiting_(&OneGauge(r, "seqd_dense_waiting_requests",
                         "Requests for dense keys waiting for a store transaction")) {}

void DenseMetrics::Update(const DenseGauges& g) {
  CatchUp(blocks_, g.blocks);
  CatchUp(transactions_, g.transactions);
  CatchUp(replayed_, g.replayed);
  CatchUp(failures_, g.failures);
  waiting_->Set(static_cast<double>(g.waiting));
}

}  // namespace seqd
