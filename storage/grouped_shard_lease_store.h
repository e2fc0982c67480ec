// Cluster mode's lease tables over several store groups (docs/cluster.md,
// "Store groups"): each shard's lease row is the one in the group the
// placement puts it in; the members live in the home group (index 0).
//
// RefreshPlacement() reads the placement version in the home group (one
// small SELECT) and the whole map only when it changed, and applies it to
// the shared StorePlacement, so every store call of the process follows
// the same map; the cluster node calls it before each lease round that
// should read it (server/cluster/placement_poll.h), so a round's leases are
// read under the map it read.
//
// A group that does not answer costs only its own shards: RenewAll and
// ReadLeases return the rows of the groups that answered (an error only
// when none did), so its shards are simply not renewed (their holders stop
// serving) and not taken.
//
// Thread safety: as ShardLeaseStore; the placement is shared and safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/placement_store.h"
#include "storage/shard_lease_store.h"
#include "storage/store_calls.h"
#include "storage/store_placement.h"

namespace seqd {

class GroupedShardLeaseStore final : public ShardLeaseStore {
 public:
  struct Group {
    std::unique_ptr<ShardLeaseStore> leases;
    std::unique_ptr<PlacementStore> placement;  // its seqd_store_group (home: the map too)
  };
  // groups[i] is placement.groups()[i]'s; `placement` must outlive the store.
  GroupedShardLeaseStore(std::vector<Group> groups, StorePlacement& placement);

  // Every group: its name claimed and its lease tables; the home group's
  // placement tables and map. The shard count is the home group's.
  Result<uint32_t> EnsureSchema(uint32_t shards) override;
  Result<std::vector<ShardLeaseRow>> ReadLeases() override;
  Result<ShardLeaseRow> Acquire(uint32_t shard, int64_t expected_version,
                                std::string_view owner) override {
    return OnShardsGroup(shard, &ShardLeaseStore::Acquire, shard, expected_version, owner);
  }
  Result<ShardLeaseRow> Renew(uint32_t shard, std::string_view owner, int64_t epoch) override {
    return OnShardsGroup(shard, &ShardLeaseStore::Renew, shard, owner, epoch);
  }
  // A row held in a group the shard is no longer placed in is not a grant:
  // the shard is served from its group's row only.
  Result<std::vector<ShardLeaseRow>> RenewAll(std::string_view owner) override {
    return RowsPlacedHere([owner](ShardLeaseStore& group) { return group.RenewAll(owner); });
  }
  Status Release(uint32_t shard, std::string_view owner, int64_t epoch) override {
    return OnShardsGroup(shard, &ShardLeaseStore::Release, shard, owner, epoch);
  }
  Status ReleaseMany(std::string_view owner, const std::vector<ShardLeaseRow>& held) override;
  Result<std::vector<ShardLeaseRow>> AcquireMany(
      std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted) override;
  // The members live in the home group.
  Status Heartbeat(std::string_view instance, std::string_view advertise) override {
    return home_leases().Heartbeat(instance, advertise);
  }
  Status Leave(std::string_view instance) override { return home_leases().Leave(instance); }
  Result<std::vector<ClusterMember>> ReadMembers() override { return home_leases().ReadMembers(); }
  Status Forget(std::string_view instance, int64_t heartbeat) override {
    return home_leases().Forget(instance, heartbeat);
  }

  // Each group's name claimed in its database (PlacementStore::ClaimGroup):
  // kFailedPrecondition if a database is another group's.
  Status ClaimGroups();
  // Reads the placement version and, if it moved, the map. Blocks.
  Status RefreshPlacement();
  // Group `index`'s stores (0: home), for the shard mover.
  ShardLeaseStore& leases(size_t index) { return *groups_[index].leases; }
  PlacementStore& home_placement() { return *groups_[0].placement; }

 private:
  // The lease store of `shard`'s group; null for a group unknown here.
  ShardLeaseStore* StoreOf(uint32_t shard) const;
  ShardLeaseStore& home_leases() const { return *groups_[0].leases; }
  // `call` on the lease store of `shard`'s group, or kStoreUnavailable.
  template <class R, class... Params, class... Args>
  R OnShardsGroup(uint32_t shard, R (ShardLeaseStore::*call)(Params...), Args&&... args) {
    return CallOrRefuse(
        StoreOf(shard), [shard] { return UnknownGroupOf(shard); }, call,
        std::forward<Args>(args)...);
  }
  // `ask` of every group, keeping each row only from the group its shard
  // is placed in (a row in another group is not a grant), in shard order.
  // A group that fails costs only its rows; an error only when none
  // answered.
  Result<std::vector<ShardLeaseRow>> RowsPlacedHere(
      const std::function<Result<std::vector<ShardLeaseRow>>(ShardLeaseStore&)>& ask);

  std::vector<Group> groups_;
  StorePlacement& placement_;
};

}  // namespace seqd
