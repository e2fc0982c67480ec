// What a listener reports about the requests it serves, and nothing else:
// the seam's view of the process's metrics. server/metrics/metrics.h
// implements it over Prometheus; a stub service in a test may count into
// anything.
//
// Thread safety: every method is safe from any thread and never blocks a
// network thread (a counter add, or rendering the registry for /metrics).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace seqd {

// The interface a request came in on: the `interface` label.
enum class Interface { kHttp = 0, kBinary = 1, kResp = 2 };
inline constexpr size_t kInterfaceCount = 3;

// Server-Sent Events streams and long polls (the seqd_stream_* series).
class StreamCounters {
 public:
  virtual ~StreamCounters() = default;
  virtual void StreamOpened() = 0;
  virtual void StreamClosed() = 0;
  virtual void LongPollStarted() = 0;
  virtual void LongPollEnded() = 0;
  virtual void EventsSent(int64_t n) = 0;
  virtual void SlowReaderClosed() = 0;
  // A stream refused at its cap: the process's, or (per_token) the token's.
  virtual void Refused(bool per_token) = 0;
};

class RequestMetrics {
 public:
  virtual ~RequestMetrics() = default;

  // One request (or `n` of one batch) answered with `status` (an error
  // code's name, or "ok"); `seconds` < 0: not timed.
  virtual void CountRequest(Interface i, std::string_view op, std::string_view status,
                            double seconds = -1, int64_t n = 1) = 0;
  void CountRequest(Interface i, std::string_view op, ErrorCode code, double seconds = -1) {
    CountRequest(i, op, ErrorCodeName(code), seconds);
  }
  // A connection closed because its peer did not read an answer in time.
  virtual void WriteTimedOut(Interface i) = 0;
  // The store answered a health check (true) or failed it.
  virtual void SetStoreUp(bool up) = 0;
  // The /metrics page, in Prometheus text format.
  virtual std::string Render() = 0;
  virtual StreamCounters& streams() = 0;

  // Seconds from `start` to now, for CountRequest.
  static double Since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

}  // namespace seqd
