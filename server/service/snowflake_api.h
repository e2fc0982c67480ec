// The seam's snowflake IDs: what a listener may ask of the generator
// (server/snowflake/snowflake_generator.h implements it; a test may stub it).
//
// Thread safety: every method is safe from any thread and never blocks it;
// Next's callback runs exactly once, on the calling thread or a timer
// thread, and must not block.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "common/error.h"
#include "server/service/snowflake_layout.h"

namespace seqd {

// The IDs of one request, ascending. A few are held inline: a single-ID
// request allocates nothing.
using SnowflakeIds = boost::container::small_vector<int64_t, 4>;

// What the generator is doing, for the status page, /admin and metrics.
struct SnowflakeStatus {
  bool serving = false;      // a request now would be served (or wait < 1 ms)
  std::string why_not;       // when !serving: the reason, as errors say it
  int worker_id = -1;        // the worker id granted; -1 while none is
  int64_t last_time_ms = 0;  // largest timestamp issued (unix ms); 0: none yet
  int64_t not_before_ms = 0;
  int64_t time_bound_ms = 0;
  double lease_left_s = 0;  // until the grant expires (steady clock); <= 0 if expired
  size_t parked = 0;
  uint64_t issued = 0;
  uint64_t clock_back_waits = 0;
  uint64_t clock_back_refusals = 0;
  uint64_t sequence_waits = 0;  // requests that waited for the next millisecond
};

class SnowflakeApi {
 public:
  using Callback = std::function<void(Result<SnowflakeIds>)>;

  virtual ~SnowflakeApi() = default;

  virtual const SnowflakeLayout& layout() const = 0;
  // IDs per request at most.
  virtual int64_t max_count() const = 0;
  // False with snowflake = off: no request is served.
  virtual bool enabled() const = 0;
  // Issues `count` IDs, ascending. kInvalidArgument unless 1 <= count <=
  // max_count().
  virtual void Next(int64_t count, Callback done) = 0;
  // An ID's fields; kInvalidArgument unless 0 <= id <= layout().max_id().
  virtual Result<SnowflakeFields> Decode(int64_t id) const = 0;
  virtual SnowflakeStatus status() const = 0;
};

}  // namespace seqd
