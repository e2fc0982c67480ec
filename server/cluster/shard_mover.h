// Moves a cluster shard's rows from one store group to another while the
// cluster serves (docs/cluster.md, "Moving a shard"). The move's state lives
// in the home group's placement row, so any instance can resume or undo a
// move another one started (and died in):
//
//   ""        → CAS: move_state "copying", move_target = B
//   copying   → copy S's rows A → B while A serves; seal S's lease row in A
//               (no write of S commits in A after it); CAS: "sealed"
//   sealed    → copy the delta; wait, if an owner may still serve S from
//               memory, as a taker of a dead owner's row waits; open S's
//               lease row in B above A's sealed epoch; CAS: group B,
//               move_state "cleanup", move_target = A (B serves from here)
//   cleanup   → after two leases (every map has moved on), delete S's rows
//               in A (its sealed lease row stays); CAS: move_state ""
//
// --undo: from "copying" only (B's copies deleted, state ""). Never both
// groups: a write needs an unsealed, owned lease row of its group, and B's
// row is opened only after A's was sealed.
//
// Thread safety: View() and StartMove() are safe from any thread and never
// block; moves run on a thread of the mover's own, one at a time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/cluster/cluster_metrics.h"
#include "server/service/placement_api.h"
#include "storage/placement_store.h"
#include "storage/shard_data_store.h"
#include "storage/shard_lease_store.h"
#include "storage/store_placement.h"

namespace seqd {

struct ShardMoverOptions {
  std::chrono::milliseconds lease{3000};
  double max_drift = 0.01;
  // Wakes every instance's lease round (the placement moved). May be empty.
  std::function<void()> nudge_all;
  // Tells this instance's cluster node a placement version it should read
  // (ClusterNode::HeardPlacement): a peer's, or the mover's own after each
  // change it made. Never blocks. May be empty.
  std::function<void(int64_t version)> heard;
  ClusterMetrics* metrics = nullptr;  // may be null
};

class ShardMover final : public PlacementApi {
 public:
  // Group i's stores are leases[i] and data[i]; everything must outlive
  // the mover.
  ShardMover(StorePlacement& placement, PlacementStore& home, std::vector<ShardLeaseStore*> leases,
             std::vector<ShardDataStore*> data, ShardMoverOptions options);
  ~ShardMover() override;  // stops a move at its next batch and joins
  ShardMover(const ShardMover&) = delete;
  ShardMover& operator=(const ShardMover&) = delete;

  PlacementView View() const override EXCLUDES(mu_);
  Status StartMove(const MoveRequest& request) override EXCLUDES(mu_);
  int64_t version() const override { return placement_.version(); }
  void Heard(int64_t version) override {
    if (options_.heard) options_.heard(version);
  }

 private:
  // The move, on the mover's thread; its outcome goes to status_.
  void Run(MoveRequest request);
  Status Move(const MoveRequest& request);
  // The shard's placement row now (a missing row: home, no move) and the
  // map's version.
  Result<std::pair<PlacementRow, int64_t>> ReadRow(uint32_t shard);
  // Compare-and-set of the shard's row from `from` to `to`, retried while
  // other shards' rows change the version.
  Status Transition(const PlacementRow& from, const PlacementRow& to);
  Status Copy(const PlacementRow& row, bool delta, int64_t rate);
  Status Finish(PlacementRow row, int64_t rate);
  // Seal(shard), tried again while it fails kStoreUnavailable, for a few
  // seconds: on a Galera group, each commit of the shard's writes through
  // another node may roll a seal back (a certification conflict on the
  // lease row); the seal is idempotent.
  Result<ShardLeaseStore::Sealed> SealRetrying(ShardLeaseStore& leases, uint32_t shard);
  Status Cleanup(PlacementRow row);
  // Waits until `shard` has an owner in group `group`; returns when.
  void MeasurePause(uint32_t shard, size_t group, std::chrono::steady_clock::time_point sealed);
  void SetPhase(const std::string& phase) EXCLUDES(mu_);

  StorePlacement& placement_;
  PlacementStore& home_;
  const std::vector<ShardLeaseStore*> leases_;
  const std::vector<ShardDataStore*> data_;
  const ShardMoverOptions options_;
  std::atomic<bool> stop_{false};
  mutable Mutex mu_;
  MoverStatus status_ GUARDED_BY(mu_);
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace seqd
