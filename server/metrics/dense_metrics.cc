#include "server/metrics/dense_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace seqd {
namespace {

prometheus::Counter* MakeCounter(prometheus::Registry& r, const char* name, const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

// Raises `c` to `total` (counters never go down).
void CatchUp(prometheus::Counter* c, int64_t total) {
  const double delta = static_cast<double>(total) - c->Value();
  if (delta > 0) c->Increment(delta);
}

}  // namespace

DenseMetrics::DenseMetrics(prometheus::Registry& r)
    : blocks_(MakeCounter(r, "seqd_dense_blocks_total", "Blocks of dense keys answered")),
      transactions_(MakeCounter(r, "seqd_dense_transactions_total",
                                "Store transactions run for dense keys")),
      replayed_(MakeCounter(r, "seqd_dense_replayed_total",
                            "Blocks of dense keys answered again for a retried token")),
      failures_(MakeCounter(r, "seqd_dense_failures_total",
                            "Requests for dense keys answered with a store error")),
      waiting_(&prometheus::BuildGauge()
                    .Name("seqd_dense_waiting_requests")
                    .Help("Requests for dense keys waiting for a store transaction")
                    .Register(r)
                    .Add({})) {}

void DenseMetrics::Update(const DenseGauges& g) {
  CatchUp(blocks_, g.blocks);
  CatchUp(transactions_, g.transactions);
  CatchUp(replayed_, g.replayed);
  CatchUp(failures_, g.failures);
  waiting_->Set(static_cast<double>(g.waiting));
}

}  // namespace seqd
