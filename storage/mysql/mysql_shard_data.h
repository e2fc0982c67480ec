// ShardDataStore on MySQL/MariaDB: text SQL whose values are hex literals
// (AppendHexLiteral) or digits, every column of each table as the
// database has it (a column added by a later version is copied too).
//
// Thread safety: safe from many threads; calls block.
#pragma once

#include <memory>
#include <utility>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/shard_data_store.h"
#include "storage/store_placement.h"

namespace seqd {

class MysqlShardData final : public MysqlStoreBase<ShardDataStore> {
 public:
  // On the group's segment and message pool; `shard_of` is the cluster's
  // key hash.
  MysqlShardData(std::shared_ptr<MysqlPool> pool, StorePlacement::ShardOfKey shard_of)
      : MysqlStoreBase(std::move(pool)), shard_of_(shard_of) {}

  Result<ShardCopyStats> CopyShard(uint32_t shard, uint32_t shards, ShardDataStore& to, bool delta,
                                   const Pace& pace) override;
  Result<int64_t> DeleteShard(uint32_t shard, uint32_t shards, const Pace& pace) override;

  // A table a shard's rows are in (mysql_shard_data.cc lists them).
  struct Table;

 private:
  // The distinct key values of `table` that hash to `shard`.
  Result<std::vector<std::string>> KeysOf(const Table& table, uint32_t shard, uint32_t shards,
                                          ShardCopyStats& stats);
  Status CopyKey(const Table& table, const std::string& key, MysqlShardData& to, bool delta,
                 const Pace& pace, ShardCopyStats& stats);
  // Writes `rows` (value lists) to `table` here in one transaction.
  Status Upsert(const Table& table, const std::vector<std::string>& columns,
                const std::vector<std::string>& rows, ShardCopyStats& stats);

  const StorePlacement::ShardOfKey shard_of_;
};

}  // namespace seqd
