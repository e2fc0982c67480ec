#include "storage/mysql/mysql_shard_guard.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace seqd {
namespace {

// The distinct shards of `keys`, ascending: every write locks its lease
// rows in one order.
std::vector<uint32_t> ShardsOf(const StorePlacement& placement,
                               std::span<const std::string_view> keys) {
  std::vector<uint32_t> shards;
  shards.reserve(keys.size());
  for (std::string_view key : keys) shards.push_back(placement.ShardOf(key));
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  return shards;
}

std::string InList(const std::vector<uint32_t>& shards) {
  std::string out;
  for (uint32_t s : shards) {
    if (!out.empty()) out += ',';
    out += std::to_string(s);
  }
  return out;
}

// How many of `shards` have an unsealed lease row here, their rows locked
// until the transaction ends: shared, or, on a Galera node, written.
size_t UnsealedLocked(MysqlConn& c, const std::vector<uint32_t>& shards) {
  const std::string in = InList(shards);
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

std::optional<Error> MysqlShardGuard::Admit(MysqlConn& c,
                                            std::span<const std::string_view> keys) const {
  if (!placement_ || keys.empty()) return std::nullopt;
  if (placement_->shards() == 0) {
    return MakeError(ErrorCode::kStoreUnavailable,
                     "the cluster's store groups are not read yet; retry");
  }
  const std::vector<uint32_t> shards = ShardsOf(*placement_, keys);
  if (UnsealedLocked(c, shards) == shards.size()) return std::nullopt;
  placement_->ReportStale();
  return MakeError(ErrorCode::kStoreUnavailable,
                   "this key's shard is moving or moved to another store group; retry");
}

}  // namespace seqd
