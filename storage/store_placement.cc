#include "storage/store_placement.h"

#include <utility>

namespace seqd {

Error UnknownStoreGroup() {
  return MakeError(ErrorCode::kStoreUnavailable,
                   "this key's shard is placed in a store group this instance does not know");
}

Error UnknownGroupOf(uint32_t shard) {
  return MakeError(ErrorCode::kStoreUnavailable,
                   "shard " + std::to_string(shard) + " is in a store group unknown here");
}

StorePlacement::StorePlacement(std::vector<std::string> groups, ShardOfKey shard_of)
    : groups_(std::move(groups)),
      shard_of_(shard_of),
      index_(std::make_shared<Index>()),
      map_(std::make_shared<PlacementMap>()) {}

size_t StorePlacement::IndexOf(std::string_view name) const {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i] == name) return i;
  }
  return kUnknownGroup;
}

std::shared_ptr<const StorePlacement::Index> StorePlacement::index() const {
  MutexLock lock(mu_);
  return index_;
}

void StorePlacement::SetShards(uint32_t shards) {
  std::shared_ptr<const PlacementMap> map;
  {
    MutexLock lock(mu_);
    map = map_;
    auto next = std::make_shared<Index>(*index_);
    next->shards = shards;
    index_ = std::move(next);
  }
  (void)Apply(*map);  // the rows read before the count was known, if any
}

uint32_t StorePlacement::shards() const { return index()->shards; }

uint32_t StorePlacement::ShardOf(std::string_view key) const {
  const uint32_t shards = index()->shards;
  return shards == 0 ? 0 : shard_of_(key, shards);
}

size_t StorePlacement::GroupOfShard(uint32_t shard) const {
  std::shared_ptr<const Index> idx = index();
  if (idx->shards > 0 && shard >= idx->shards) return kUnknownGroup;  // no such shard
  return shard < idx->group_of.size() ? idx->group_of[shard] : 0;
}

size_t StorePlacement::GroupOfKey(std::string_view key) const {
  std::shared_ptr<const Index> idx = index();
  if (idx->shards == 0 || idx->group_of.empty()) return 0;
  return idx->group_of[shard_of_(key, idx->shards)];
}

Status StorePlacement::Apply(PlacementMap map) {
  MutexLock lock(mu_);
  auto next = std::make_shared<Index>();
  next->shards = index_->shards;
  std::string unknown;
  if (next->shards > 0 && !map.rows.empty()) {
    next->group_of.assign(next->shards, 0);
    for (const PlacementRow& row : map.rows) {
      if (row.shard >= next->shards) continue;
      const size_t g = IndexOf(row.group);
      next->group_of[row.shard] = g;
      if (g == kUnknownGroup && unknown.empty()) unknown = row.group;
    }
  }
  index_ = std::move(next);
  map_ = std::make_shared<PlacementMap>(std::move(map));
  version_.store(map_->version, std::memory_order_release);
  if (unknown.empty()) return OkStatus();
  return MakeError(ErrorCode::kFailedPrecondition,
                   "the placement names store group '" + unknown +
                       "', which this instance was not configured with (--store-group)");
}

std::shared_ptr<const PlacementMap> StorePlacement::map() const {
  MutexLock lock(mu_);
  return map_;
}

void StorePlacement::ReportStale(StaleAccess access) const {
  std::shared_ptr<const std::function<void(StaleAccess)>> hook;
  {
    MutexLock lock(mu_);
    hook = stale_hook_;
  }
  if (hook && *hook) (*hook)(access);
}

void StorePlacement::SetStaleHook(std::function<void(StaleAccess)> hook) {
  auto shared = std::make_shared<const std::function<void(StaleAccess)>>(std::move(hook));
  MutexLock lock(mu_);
  stale_hook_ = std::move(shared);
}

}  // namespace seqd
