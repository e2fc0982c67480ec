#include "storage/grouped_shard_lease_store.h"

#include <algorithm>
#include <map>

namespace seqd {
GroupedShardLeaseStore::GroupedShardLeaseStore(std::vector<Group> groups, StorePlacement& placement)
    : groups_(std::move(groups)), placement_(placement) {}

ShardLeaseStore* GroupedShardLeaseStore::StoreOf(uint32_t shard) const {
  const size_t g = placement_.GroupOfShard(shard);
  return g < groups_.size() ? groups_[g].leases.get() : nullptr;
}

Status GroupedShardLeaseStore::ClaimGroups() {
  const std::vector<std::string>& names = placement_.groups();
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (Status s = groups_[i].placement->ClaimGroup(names[i]); !s) return s;
  }
  return OkStatus();
}

Result<uint32_t> GroupedShardLeaseStore::EnsureSchema(uint32_t shards) {
  if (Status s = ClaimGroups(); !s) return s.error();
  auto fixed = groups_[0].leases->EnsureSchema(shards);
  if (!fixed) return fixed;
  for (size_t i = 1; i < groups_.size(); ++i) {
    if (auto s = groups_[i].leases->EnsureSchema(*fixed); !s) return s.error();
  }
  if (Status s = groups_[0].placement->EnsureSchema(); !s) return s.error();
  placement_.SetShards(*fixed);
  auto map = groups_[0].placement->ReadPlacement();
  if (!map) return map.error();
  if (Status s = placement_.Apply(std::move(map).value()); !s) return s.error();
  return fixed;
}

Status GroupedShardLeaseStore::RefreshPlacement() {
  auto version = groups_[0].placement->ReadVersion();
  if (!version) return version.error();
  if (*version == placement_.version()) return OkStatus();
  auto map = groups_[0].placement->ReadPlacement();
  if (!map) return map.error();
  return placement_.Apply(std::move(map).value());
}

Result<std::vector<ShardLeaseRow>> GroupedShardLeaseStore::ReadLeases() {
  // Shards of a group unknown here are left out below.
  return RowsPlacedHere([](ShardLeaseStore& group) { return group.ReadLeases(); });
}

Result<std::vector<ShardLeaseRow>> GroupedShardLeaseStore::RowsPlacedHere(
    const std::function<Result<std::vector<ShardLeaseRow>>(ShardLeaseStore&)>& ask) {
  std::vector<ShardLeaseRow> out;
  std::optional<Error> failed;
  size_t answered = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto rows = ask(*groups_[g].leases);
    if (!rows) {
      failed = rows.error();
      continue;
    }
    ++answered;
    for (ShardLeaseRow& row : *rows) {
      if (placement_.GroupOfShard(row.shard) == g) out.push_back(std::move(row));
    }
  }
  if (answered == 0 && failed) return *failed;
  std::sort(out.begin(), out.end(),
            [](const ShardLeaseRow& a, const ShardLeaseRow& b) { return a.shard < b.shard; });
  return out;
}

Status GroupedShardLeaseStore::ReleaseMany(std::string_view owner,
                                           const std::vector<ShardLeaseRow>& held) {
  std::map<size_t, std::vector<ShardLeaseRow>> by_group;
  for (const ShardLeaseRow& row : held) {
    by_group[placement_.GroupOfShard(row.shard)].push_back(row);
  }
  Status result = OkStatus();
  for (auto& [g, rows] : by_group) {
    if (g >= groups_.size()) continue;  // unknown here: never held here either
    if (Status s = groups_[g].leases->ReleaseMany(owner, rows); !s) result = s;
  }
  return result;
}

Result<std::vector<ShardLeaseRow>> GroupedShardLeaseStore::AcquireMany(
    std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted) {
  std::map<size_t, std::vector<std::pair<uint32_t, int64_t>>> by_group;
  for (const auto& w : wanted) by_group[placement_.GroupOfShard(w.first)].push_back(w);
  std::vector<ShardLeaseRow> out;
  std::optional<Error> failed;
  for (auto& [g, part] : by_group) {
    if (g >= groups_.size()) continue;
    auto taken = groups_[g].leases->AcquireMany(owner, part);
    if (!taken) {
      failed = taken.error();
      continue;
    }
    out.insert(out.end(), taken->begin(), taken->end());
  }
  if (out.empty() && failed) return *failed;
  std::sort(out.begin(), out.end(),
            [](const ShardLeaseRow& a, const ShardLeaseRow& b) { return a.shard < b.shard; });
  return out;
}

}  // namespace seqd
