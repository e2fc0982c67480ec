#include "server/metrics/stream_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace seqd {

StreamMetrics::StreamMetrics(prometheus::Registry& r) {
  using namespace prometheus;
  streams_ = &BuildGauge()
                  .Name("seqd_sse_streams")
                  .Help("Server-Sent Events streams open")
                  .Register(r)
                  .Add({});
  long_polls_ = &BuildGauge()
                     .Name("seqd_long_polls_waiting")
                     .Help("Long-poll pulls waiting for a message")
                     .Register(r)
                     .Add({});
  events_ = &BuildCounter()
                 .Name("seqd_sse_events_total")
                 .Help("Message events queued to Server-Sent Events streams")
                 .Register(r)
                 .Add({});
  slow_closes_ = &BuildCounter()
                      .Name("seqd_sse_slow_reader_closes_total")
                      .Help("Streams ended with event: dropped because their buffer was full")
                      .Register(r)
                      .Add({});
  auto& refused = BuildCounter()
                      .Name("seqd_stream_refusals_total")
                      .Help("Streams and long-polls refused (429) by a limit")
                      .Register(r);
  refused_total_ = &refused.Add({{"reason", "total_limit"}});
  refused_token_ = &refused.Add({{"reason", "token_limit"}});
}

void StreamMetrics::StreamOpened() { streams_->Increment(); }
void StreamMetrics::StreamClosed() { streams_->Decrement(); }
void StreamMetrics::LongPollStarted() { long_polls_->Increment(); }
void StreamMetrics::LongPollEnded() { long_polls_->Decrement(); }
void StreamMetrics::EventsSent(int64_t n) { events_->Increment(static_cast<double>(n)); }
void StreamMetrics::SlowReaderClosed() { slow_closes_->Increment(); }
void StreamMetrics::Refused(bool per_token) {
  (per_token ? refused_token_ : refused_total_)->Increment();
}

}  // namespace seqd
