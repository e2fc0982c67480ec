#include "server/service/snowflake_layout.h"

#include <string>

namespace seqd {

Status SnowflakeLayout::Validate() const {
  auto bad = [](std::string what) { return Status(MakeError(ErrorCode::kInvalidArgument, what)); };
  if (time_bits < 1) return bad("snowflake time_bits must be at least 1");
  if (worker_bits < 1 || worker_bits > 20) return bad("snowflake worker_bits must be in [1, 20]");
  if (sequence_bits < 1) return bad("snowflake sequence_bits must be at least 1");
  if (time_bits + worker_bits + sequence_bits > 63) {
    return bad("snowflake time_bits + worker_bits + sequence_bits must be at most 63, got " +
               std::to_string(time_bits + worker_bits + sequence_bits));
  }
  if (epoch_ms < 0) return bad("snowflake epoch_ms must be >= 0");
  return OkStatus();
}

Result<SnowflakeFields> SnowflakeLayout::Decode(int64_t id) const {
  if (id < 0 || id > max_id()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "not a snowflake ID of this layout: " + std::to_string(id) +
                         " is outside [0, " + std::to_string(max_id()) + "]");
  }
  SnowflakeFields f;
  f.sequence = id & max_sequence();
  f.worker = (id >> sequence_bits) & max_worker();
  f.time_ms = (id >> (sequence_bits + worker_bits)) + epoch_ms;
  return f;
}

}  // namespace seqd
