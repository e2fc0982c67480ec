#include "storage/shard_lease_store.h"

namespace seqd {

namespace shard_lease {

Status CheckShards(uint32_t shards) {
  if (shards < 1 || shards > kMaxShards) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "shards must be in 1.." + std::to_string(kMaxShards));
  }
  return OkStatus();
}

Status CheckInstance(std::string_view instance) {
  if (instance.empty() || instance.size() > kMaxInstanceIdBytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "instance id must be 1.." + std::to_string(kMaxInstanceIdBytes) + " bytes");
  }
  return OkStatus();
}

Error NotHeld(uint32_t shard) {
  return MakeError(ErrorCode::kFailedPrecondition,
                   "shard " + std::to_string(shard) + " is no longer held at this epoch");
}

Error VersionMoved(uint32_t shard, int64_t expected) {
  return MakeError(
      ErrorCode::kFailedPrecondition,
      "shard " + std::to_string(shard) + " moved past version " + std::to_string(expected));
}

}  // namespace shard_lease

Status ShardLeaseStore::ReleaseMany(std::string_view owner,
                                    const std::vector<ShardLeaseRow>& held) {
  for (const ShardLeaseRow& row : held) {
    if (Status s = Release(row.shard, owner, row.epoch); !s) return s;
  }
  return OkStatus();
}

Result<std::vector<ShardLeaseRow>> ShardLeaseStore::AcquireMany(
    std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted) {
  std::vector<ShardLeaseRow> taken;
  for (const auto& [shard, version] : wanted) {
    Result<ShardLeaseRow> row = Acquire(shard, version, owner);
    if (row) {
      taken.push_back(*row);
    } else if (row.error().code != ErrorCode::kFailedPrecondition) {
      if (taken.empty()) return row.error();
      break;  // what was taken stays taken: report it
    }
  }
  return taken;
}

}  // namespace seqd
