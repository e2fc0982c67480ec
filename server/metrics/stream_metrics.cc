#include "server/metrics/stream_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "server/metrics/series.h"

namespace seqd {

StreamMetrics::StreamMetrics(prometheus::Registry& r)
    : streams_(&OneGauge(r, "seqd_sse_streams", "Server-Sent Events streams open")),
      long_polls_(&OneGauge(r, "seqd_long_polls_waiting", "Long-poll pulls waiting for a message")),
      events_(&OneCounter(r, "seqd_sse_events_total",
                          "Message events queued to Server-Sent Events streams")),
      slow_closes_(&OneCounter(r, "seqd_sse_slow_reader_closes_total",
                               "Streams ended with event: dropped because their buffer was full")) {
  auto& refused = CounterFamily(r, "seqd_stream_refusals_total",
                                "Streams and long-polls refused (429) by a limit");
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
