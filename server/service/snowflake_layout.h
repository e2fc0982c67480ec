// The bit layout of a snowflake ID: sign bit 0, then `time_bits` of
// milliseconds since `epoch_ms`, `worker_bits` of worker id, `sequence_bits`
// of sequence within the millisecond. The default is Leaf's (and Twitter's):
// 41/10/12 with epoch 1288834974657 (2010-11-04T01:42:54.657Z), so IDs
// issued after a switch from Leaf keep increasing.
//
// Thread safety: plain value; const methods are safe from any thread.
#pragma once

#include <cstdint>

#include "common/error.h"

namespace seqd {

struct SnowflakeFields {
  int64_t time_ms = 0;  // unix millis (epoch added back)
  int64_t worker = 0;
  int64_t sequence = 0;
};

struct SnowflakeLayout {
  static constexpr int64_t kLeafEpochMs = 1288834974657;

  int time_bits = 41;
  int worker_bits = 10;
  int sequence_bits = 12;
  int64_t epoch_ms = kLeafEpochMs;

  // kInvalidArgument naming the field unless: every width >= 1,
  // worker_bits <= 20, time_bits + worker_bits + sequence_bits <= 63,
  // epoch_ms >= 0.
  Status Validate() const;

  int64_t max_worker() const { return (int64_t{1} << worker_bits) - 1; }
  int64_t max_sequence() const { return (int64_t{1} << sequence_bits) - 1; }
  // The last unix millisecond the time field can hold.
  int64_t max_time_ms() const { return epoch_ms + (int64_t{1} << time_bits) - 1; }
  // The largest ID of this layout (every field at its maximum).
  int64_t max_id() const { return (int64_t{1} << (time_bits + worker_bits + sequence_bits)) - 1; }

  // REQUIRES: Validate() ok, epoch_ms <= time_ms <= max_time_ms(),
  // 0 <= worker <= max_worker(), 0 <= sequence <= max_sequence().
  int64_t Compose(int64_t time_ms, int64_t worker, int64_t sequence) const {
    return ((time_ms - epoch_ms) << (worker_bits + sequence_bits)) | (worker << sequence_bits) |
           sequence;
  }

  // kInvalidArgument unless 0 <= id <= max_id().
  Result<SnowflakeFields> Decode(int64_t id) const;
};

}  // namespace seqd
