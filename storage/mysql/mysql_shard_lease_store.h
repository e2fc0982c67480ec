// ShardLeaseStore on MySQL/MariaDB (tables: storage/shard_lease_store.h).
// Every change is one conditional UPDATE in its own transaction, and a
// COMMIT counts only when confirmed (storage/mysql/mysql_pool.h); a re-run after
// a lost COMMIT re-reads the row, so an Acquire that did commit is found as
// ours, never reported as lost to someone else.
//
// Thread safety: safe from many threads; calls block (database threads).
#pragma once

#include <memory>
#include <utility>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/shard_lease_store.h"

namespace seqd {

class MysqlShardLeaseStore final : public MysqlStoreBase<ShardLeaseStore> {
 public:
  // On a pool of its own (or the lease pool shared with worker leases).
  explicit MysqlShardLeaseStore(std::shared_ptr<MysqlPool> pool)
      : MysqlStoreBase(std::move(pool)) {}

  Result<uint32_t> EnsureSchema(uint32_t shards) override;
  Result<std::vector<ShardLeaseRow>> ReadLeases() override;
  Result<ShardLeaseRow> Acquire(uint32_t shard, int64_t expected_version,
                                std::string_view owner) override;
  Result<ShardLeaseRow> Renew(uint32_t shard, std::string_view owner, int64_t epoch) override;
  Result<std::vector<ShardLeaseRow>> RenewAll(std::string_view owner) override;
  Status Release(uint32_t shard, std::string_view owner, int64_t epoch) override;
  // One transaction each.
  Status ReleaseMany(std::string_view owner, const std::vector<ShardLeaseRow>& held) override;
  Result<std::vector<ShardLeaseRow>> AcquireMany(
      std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted) override;
  Result<Sealed> Seal(uint32_t shard) override;
  Result<int64_t> SealedEpoch(uint32_t shard) override;
  Status Open(uint32_t shard, int64_t min_epoch) override;
  Status Heartbeat(std::string_view instance, std::string_view advertise) override;
  Status Leave(std::string_view instance) override;
  Result<std::vector<ClusterMember>> ReadMembers() override;
  Status Forget(std::string_view instance, int64_t heartbeat) override;
};

}  // namespace seqd
