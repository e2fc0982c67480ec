#include "storage/mysql/mysql_shard_guard.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace seqd {
namespace {

std::string InList(const std::vector<uint32_t>& shards) {
  std::string out;
  for (uint32_t s : shards) {
    if (!out.empty()) out += ',';
    out += std::to_string(s);
  }
  return out;
}

// How many of `shards` have an unsealed lease row here. For a write, their
// rows are locked until the transaction ends: shared, or, on a Galera
// node, written.
size_t Unsealed(MysqlConn& c, const std::vector<uint32_t>& shards, StaleAccess access) {
  const std::string in = InList(shards);
  if (access == StaleAccess::kRead) {
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(
        "SELECT COUNT(*) FROM seqd_shard_lease WHERE shard IN (" + in + ") AND sealed = 0"));
    return rs->next() ? static_cast<size_t>(rs->getInt64(1)) : 0;
  }
  if (c.galera) {
    return static_cast<size_t>(
        c.Update("UPDATE seqd_shard_lease SET fences = fences + 1 WHERE shard IN (" + in +
                 ") AND sealed = 0"));
  }
  std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(
      "SELECT sealed FROM seqd_shard_lease WHERE shard IN (" + in + ") LOCK IN SHARE MODE"));
  size_t unsealed = 0;
  while (rs->next()) {
    if (rs->getInt(1) == 0) ++unsealed;
  }
  return unsealed;
}

}  // namespace

std::optional<Error> MysqlShardGuard::AdmitListed(MysqlConn& c,
                                                  const std::vector<std::string>& keys) const {
  if (!placement_) return std::nullopt;
  std::vector<uint32_t> shards;
  for (const std::string& key : keys) {
    if (placement_->GroupOfKey(key) == group_) shards.push_back(placement_->ShardOf(key));
  }
  return Check(c, std::move(shards), StaleAccess::kRead);
}

std::optional<Error> MysqlShardGuard::Check(MysqlConn& c, std::vector<uint32_t> shards,
                                            StaleAccess access) const {
  if (!placement_ || shards.empty()) return std::nullopt;
  if (placement_->shards() == 0) {
    return MakeError(ErrorCode::kStoreUnavailable,
                     "the cluster's store groups are not read yet; retry");
  }
  // Distinct and ascending: every write locks its lease rows in one order.
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  if (Unsealed(c, shards, access) == shards.size()) return std::nullopt;
  placement_->ReportStale(access);
  return MakeError(ErrorCode::kStoreUnavailable,
                   "this key's shard is moving or moved to another store group; retry");
}

}  // namespace seqd
