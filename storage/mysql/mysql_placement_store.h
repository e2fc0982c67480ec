// PlacementStore on MySQL/MariaDB (tables: storage/placement_store.h).
//
// Thread safety: safe from many threads; calls block (database threads).
#pragma once

#include <memory>
#include <utility>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/placement_store.h"

namespace seqd {

class MysqlPlacementStore final : public MysqlStoreBase<PlacementStore> {
 public:
  // On the group's cluster pool (the lease store's).
  explicit MysqlPlacementStore(std::shared_ptr<MysqlPool> pool) : MysqlStoreBase(std::move(pool)) {}

  Status ClaimGroup(std::string_view name) override;
  Status EnsureSchema() override;
  Result<int64_t> ReadVersion() override;
  Result<PlacementMap> ReadPlacement() override;
  Result<int64_t> Change(int64_t expected, const PlacementRow& row) override;
};

}  // namespace seqd
