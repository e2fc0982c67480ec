// Metrics of held HTTP requests: Server-Sent Events streams and waiting
// long-polls (names: docs/metrics.md).
//
//   seqd_sse_streams                      gauge: SSE streams open
//   seqd_long_polls_waiting               gauge: long-polls waiting for a message
//   seqd_sse_events_total                 counter: message events queued to streams
//   seqd_sse_slow_reader_closes_total     counter: streams ended by a full buffer
//   seqd_stream_refusals_total{reason}    counter: streams and long-polls refused
//                                         (reason: total_limit, token_limit)
//
// Thread safety: every method is safe from any thread (atomic updates).
#pragma once

#include <cstdint>

#include "server/metrics/series.h"
#include "server/service/request_metrics.h"

namespace seqd {

class StreamMetrics final : public StreamCounters {
 public:
  // Registers the series in `registry`, which must outlive this.
  explicit StreamMetrics(prometheus::Registry& registry);

  void StreamOpened() override;
  void StreamClosed() override;
  void LongPollStarted() override;
  void LongPollEnded() override;
  void EventsSent(int64_t n) override;
  void SlowReaderClosed() override;
  // `per_token`: the token's limit, else the total.
  void Refused(bool per_token) override;

 private:
  prometheus::Gauge* streams_;
  prometheus::Gauge* long_polls_;
  prometheus::Counter* events_;
  prometheus::Counter* slow_closes_;
  prometheus::Counter* refused_total_;
  prometheus::Counter* refused_token_;
};

}  // namespace seqd
