#include "storage/memory/memory_shard_lease_store.h"

namespace seqd {

Result<uint32_t> MemoryShardLeaseStore::EnsureSchema(uint32_t shards) {
  if (Status s = shard_lease::CheckShards(shards); !s) return s.error();
  MutexLock lock(mu_);
  if (shards_ == 0) {
    shards_ = shards;
    rows_.resize(shards);
    for (uint32_t i = 0; i < shards; ++i) rows_[i].shard = i;
  }
  return shards_;
}

Result<std::vector<ShardLeaseRow>> MemoryShardLeaseStore::ReadLeases() {
  MutexLock lock(mu_);
  return rows_;
}

Result<ShardLeaseRow*> MemoryShardLeaseStore::RowLocked(uint32_t shard) {
  if (shard >= rows_.size()) {
    return MakeError(ErrorCode::kInvalidArgument, "no shard " + std::to_string(shard));
  }
  return &rows_[shard];
}

Result<ShardLeaseRow> MemoryShardLeaseStore::Acquire(uint32_t shard, int64_t expected_version,
                                                     std::string_view owner) {
  if (Status s = shard_lease::CheckInstance(owner); !s) return s.error();
  MutexLock lock(mu_);
  auto row = RowLocked(shard);
  if (!row) return row.error();
  ShardLeaseRow& r = **row;
  if (r.version != expected_version) return shard_lease::VersionMoved(shard, expected_version);
  r.owner = std::string(owner);
  ++r.epoch;
  ++r.version;
  return r;
}

Result<ShardLeaseRow> MemoryShardLeaseStore::Renew(uint32_t shard, std::string_view owner,
                                                   int64_t epoch) {
  MutexLock lock(mu_);
  auto row = RowLocked(shard);
  if (!row) return row.error();
  ShardLeaseRow& r = **row;
  if (r.owner.empty() || r.owner != owner || r.epoch != epoch) return shard_lease::NotHeld(shard);
  ++r.version;
  return r;
}

Result<std::vector<ShardLeaseRow>> MemoryShardLeaseStore::RenewAll(std::string_view owner) {
  if (Status s = shard_lease::CheckInstance(owner); !s) return s.error();
  MutexLock lock(mu_);
  std::vector<ShardLeaseRow> out;
  for (ShardLeaseRow& r : rows_) {
    if (r.owner != owner) continue;
    ++r.version;
    out.push_back(r);
  }
  return out;
}

Status MemoryShardLeaseStore::Release(uint32_t shard, std::string_view owner, int64_t epoch) {
  MutexLock lock(mu_);
  auto row = RowLocked(shard);
  if (!row) return row.error();
  ShardLeaseRow& r = **row;
  if (r.owner.empty() || r.owner != owner || r.epoch != epoch) return OkStatus();
  r.owner.clear();
  ++r.version;
  return OkStatus();
}

Status MemoryShardLeaseStore::Heartbeat(std::string_view instance, std::string_view advertise) {
  if (Status s = shard_lease::CheckInstance(instance); !s) return s;
  MutexLock lock(mu_);
  auto it = members_.find(instance);
  if (it == members_.end()) {
    it = members_.emplace(std::string(instance), ClusterMember{std::string(instance), "", 0, false})
             .first;
  }
  it->second.advertise = std::string(advertise);
  ++it->second.heartbeat;
  it->second.left = false;
  return OkStatus();
}

Status MemoryShardLeaseStore::Leave(std::string_view instance) {
  MutexLock lock(mu_);
  auto it = members_.find(instance);
  if (it == members_.end()) return OkStatus();
  it->second.left = true;
  ++it->second.heartbeat;
  return OkStatus();
}

Status MemoryShardLeaseStore::Forget(std::string_view instance, int64_t heartbeat) {
  MutexLock lock(mu_);
  auto it = members_.find(instance);
  if (it != members_.end() && it->second.heartbeat == heartbeat) members_.erase(it);
  return OkStatus();
}

Result<std::vector<ClusterMember>> MemoryShardLeaseStore::ReadMembers() {
  MutexLock lock(mu_);
  std::vector<ClusterMember> out;
  for (const auto& [id, m] : members_) out.push_back(m);
  return out;
}

}  // namespace seqd
