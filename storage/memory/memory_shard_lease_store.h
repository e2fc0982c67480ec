// ShardLeaseStore in memory: the conformance suite's reference, and the
// cluster tests' store.
//
// Thread safety: every method is safe from any thread (one mutex).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "storage/shard_lease_store.h"

namespace seqd {

class MemoryShardLeaseStore final : public ShardLeaseStore {
 public:
  Result<uint32_t> EnsureSchema(uint32_t shards) override;
  Result<std::vector<ShardLeaseRow>> ReadLeases() override;
  Result<ShardLeaseRow> Acquire(uint32_t shard, int64_t expected_version,
                                std::string_view owner) override;
  Result<ShardLeaseRow> Renew(uint32_t shard, std::string_view owner, int64_t epoch) override;
  Result<std::vector<ShardLeaseRow>> RenewAll(std::string_view owner) override;
  Status Release(uint32_t shard, std::string_view owner, int64_t epoch) override;
  Status Heartbeat(std::string_view instance, std::string_view advertise) override;
  Status Leave(std::string_view instance) override;
  Result<std::vector<ClusterMember>> ReadMembers() override;
  Status Forget(std::string_view instance, int64_t heartbeat) override;

 private:
  Result<ShardLeaseRow*> RowLocked(uint32_t shard) REQUIRES(mu_);

  Mutex mu_;
  uint32_t shards_ GUARDED_BY(mu_) = 0;  // 0 until EnsureSchema
  std::vector<ShardLeaseRow> rows_ GUARDED_BY(mu_);
  std::map<std::string, ClusterMember, std::less<>> members_ GUARDED_BY(mu_);
};

}  // namespace seqd
