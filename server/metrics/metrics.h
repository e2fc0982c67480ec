// Prometheus metrics of one seqd process (names and labels: docs/metrics.md).
//
// Hot-path calls (CountRequest, IdsIssued counters, message counters) are an
// atomic increment or two: counters are created once per label set and
// cached. Per-key gauges, parked requests, queued sends, subscriptions and
// open connections are read from snapshots when Render() runs (at scrape
// time), never kept up to date on the hot path.
//
// Thread safety: every method is safe from any thread. Set the sources
// (SetAllocatorStats, SetMessageStats, SetOpenConnections) before serving.
// Metrics reads the components only through those callbacks: it includes
// none of them.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "server/metrics/dense_metrics.h"
#include "server/metrics/series.h"
#include "server/metrics/stream_metrics.h"
#include "server/service/request_metrics.h"

namespace seqd {

// The `key` label of a reservation that failed before the store ever
// confirmed the key (no rule matches it and no reservation succeeded yet):
// never the key itself, which may not exist. Not a valid key name.
inline constexpr std::string_view kUnconfirmedKeyLabel = "(unconfirmed)";

struct MessageGauges {
  int64_t queued_sends = 0;
  int64_t subscriptions = 0;
};

// One key in memory, for the per-key gauges (server/core/allocator_gauges.h
// builds these from the allocator's snapshot).
struct KeyGaugeInput {
  std::string label;        // KeyMetricLabel(): the key, or "auto:<prefix>"
  bool registered = false;  // not auto-created, and labelled by its own name
  int64_t step = 0;
  int64_t current_left = 0;  // IDs left in the current buffer (0 if not loaded)
  int64_t next_left = 0;     // IDs left in the next buffer (0 if not loaded)
  bool next_ready = false;
  double rate_per_s = 0;
};

struct AllocatorGauges {
  int64_t parked = 0;  // requests waiting for a reservation
  std::vector<KeyGaugeInput> keys;
  int64_t keys_in_memory = 0;
  int64_t unknown_keys = 0;  // remembered as recently unknown
  // Totals since the start (counters).
  int64_t evicted_idle = 0;
  int64_t evicted_capacity = 0;
  int64_t auto_create_refused = 0;
  int64_t parked_total = 0;  // requests that waited for a reservation
};

struct SnowflakeGauges {
  int64_t worker_id = -1;  // -1: none leased yet
  bool serving = false;
  double lease_left_s = 0;
  int64_t parked = 0;
};

class Metrics final : public RequestMetrics {
 public:
  // The fixed op names per interface; anything else counts as the last one
  // listed for HTTP and RESP ("other"), "protocol_error" for binary.
  static const std::vector<std::string_view>& Ops(Interface i);
  // The fixed status names: ErrorCodeName() of every ErrorCode, then "ok",
  // the labels of the protocol layers' own answers (ProtocolError in
  // server/service/wire_errors.h: "bad_request", "method_not_allowed", ...),
  // then "other". ctest unit_tests checks that every label the op tables and
  // wire_errors give is one of these.
  static const std::vector<std::string_view>& Statuses();

  explicit Metrics(std::string_view version);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The Prometheus text format of every series, after refreshing the
  // scrape-time gauges.
  std::string Render() override;

  // --- requests ---------------------------------------------------------
  // `n` requests answered (one, or a run served together); `seconds` from
  // the complete request to the answer being queued, observed once
  // (negative: not observed).
  void CountRequest(Interface i, std::string_view op, std::string_view status, double seconds = -1,
                    int64_t n = 1) override;
  using RequestMetrics::CountRequest;
  void SetOpenConnections(Interface i, std::function<size_t()> source);
  // A connection closed because it did not take a reply write within its
  // listener's write timeout (http_write_timeout_s, tcp_write_timeout_s).
  void WriteTimedOut(Interface i) override;

  // --- allocator --------------------------------------------------------
  // The counter of IDs issued for `label` (cache it: this looks it up).
  prometheus::Counter& IdsIssued(const std::string& label);
  void ReservationDone(const std::string& label, bool ok, double seconds);
  void SetStoreUp(bool up) override;
  void SetAllocatorStats(std::function<AllocatorGauges()> source);

  // --- message store ----------------------------------------------------
  void MessageStored(int64_t n);
  void MessageDuplicates(int64_t n);
  void MessageSendError(ErrorCode code, int64_t n = 1);
  void MessageBatch(size_t messages, double commit_seconds);
  void SetMessageStats(std::function<MessageGauges()> source);

  // --- dense keys -------------------------------------------------------
  // The dense allocator's totals, read at each scrape (DenseMetrics).
  void SetDenseStats(std::function<DenseGauges()> source);

  // --- snowflake --------------------------------------------------------
  void SnowflakeIssued(int64_t n);
  // The clock moved back: a request waited (within the bound) or was refused.
  void SnowflakeClockBack(bool refused);
  // A request waited for the next millisecond (sequence used up).
  void SnowflakeSequenceWait();
  void SnowflakeLeaseRenewal(bool ok);
  void SetSnowflakeStats(std::function<SnowflakeGauges()> source);

  prometheus::Registry& registry();
  // SSE streams and long-polls (server/metrics/stream_metrics.h).
  StreamMetrics& streams() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seqd
