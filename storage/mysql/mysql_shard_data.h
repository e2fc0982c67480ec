// ShardDataStore on MySQL/MariaDB: text SQL whose values are hex literals
// (AppendHexLiteral) or digits, every column of each table as the
// database has it (a column added by a later version is copied too).
//
// Every statement is bounded, whatever the group holds: a shard's keys are
// found by keyset pagination (a page of keys, or of rows, per statement,
// each page starting after the last one's end), never by one query over a
// whole table, and a key's rows are read in pages where a key may have
// many (messages).
//
// Thread safety: safe from many threads; calls block.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/shard_data_store.h"
#include "storage/store_placement.h"

namespace seqd {

// How much one statement of a copy or a delete reads at most.
struct MysqlShardDataOptions {
  int64_t keys_per_page = 1000;  // distinct keys listed per statement (>= 1)
  int64_t rows_per_page = 1000;  // rows read per statement (>= 1)
};

class MysqlShardData final : public MysqlStoreBase<ShardDataStore> {
 public:
  // On the group's segment and message pool; `shard_of` is the cluster's
  // key hash.
  MysqlShardData(std::shared_ptr<MysqlPool> pool, StorePlacement::ShardOfKey shard_of,
                 MysqlShardDataOptions options = {})
      : MysqlStoreBase(std::move(pool)), shard_of_(shard_of), options_(options) {}

  Result<ShardCopyStats> CopyShard(uint32_t shard, uint32_t shards, ShardDataStore& to, bool delta,
                                   const Pace& pace) override;
  Result<int64_t> DeleteShard(uint32_t shard, uint32_t shards, const Pace& pace) override;

  // A table a shard's rows are in (mysql_shard_data.cc lists them).
  struct Table;

 private:
  // A page of the distinct key values of `table` after `after` (in key
  // order, every shard's), at most options_.keys_per_page.
  Result<std::vector<std::string>> KeyPage(const Table& table,
                                           const std::optional<std::string>& after,
                                           ShardCopyStats& stats);
  // Runs `each(key)` for every key of `table` that hashes to `shard`, a
  // page of keys at a time; `pace(0)` after each page (a stop is honoured
  // between pages that hold none of the shard's keys too).
  template <typename Each>
  Status ForEachShardKey(const Table& table, uint32_t shard, uint32_t shards, const Pace& pace,
                         ShardCopyStats& stats, Each each);
  Status CopyKey(const Table& table, const std::string& key, MysqlShardData& to, bool delta,
                 const Pace& pace, ShardCopyStats& stats);
  // Rows mode (a table whose key does not lead its primary key): the
  // table's rows in primary-key order, a page at a time; the shard's are
  // written to `to`.
  Status CopyRows(const Table& table, uint32_t shard, uint32_t shards, MysqlShardData& to,
                  const Pace& pace, ShardCopyStats& stats);
  Result<int64_t> DeleteRows(const Table& table, uint32_t shard, uint32_t shards, const Pace& pace);
  Result<int64_t> DeleteKey(const Table& table, const std::string& key, const Pace& pace);
  // Runs the DELETE `text` in a transaction of its own; the rows it removed.
  Result<int64_t> DeleteNow(const std::string& text);
  // Writes `rows` (value lists) to `table` here in one transaction.
  Status Upsert(const Table& table, const std::vector<std::string>& columns,
                const std::vector<std::string>& rows, ShardCopyStats& stats);

  const StorePlacement::ShardOfKey shard_of_;
  const MysqlShardDataOptions options_;
};

}  // namespace seqd
