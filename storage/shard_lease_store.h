// The durable side of cluster mode (docs/cluster.md):
// the shard count fixed when the cluster's tables are created, one lease
// row per shard, and the members.
//
//   seqd_cluster       name -> value; "shards" is set once, never changed
//   seqd_shard_lease   shard (PK), owner ("" when free), epoch (a fencing
//                      token: +1 whenever the owner changes), version (+1 on
//                      every change of the row: takers compare-and-set it),
//                      fences (+1 on every fenced write: Galera certifies
//                      only write-write conflicts, so the fence must write)
//   seqd_cluster_member instance (PK), advertise "host:port", heartbeat (+1
//                      per beat; liveness is judged by watching it change on
//                      one's own monotonic clock, never by wall time),
//                      left (1 after a clean leave)
//
// Owners are instance ids: a token of one process, so a restarted process is
// a new member.
//
// Thread safety: every implementation is safe to call from many threads at
// once. Calls BLOCK on I/O: run them on database threads only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace seqd {

struct ShardLeaseRow {
  uint32_t shard = 0;
  std::string owner;  // "" when free
  int64_t epoch = 0;
  int64_t version = 0;

  bool operator==(const ShardLeaseRow&) const = default;
};

struct ClusterMember {
  std::string instance;
  std::string advertise;  // host:port of its binary protocol
  int64_t heartbeat = 0;
  bool left = false;
  // Time since its last beat by the store's own clock (one clock, so no
  // agreement between machines is needed), at whole seconds on MySQL; -1
  // if unknown. Only a hint for members seen for the first time; liveness
  // is otherwise judged by watching `heartbeat` change.
  int64_t age_ms = -1;

  bool operator==(const ClusterMember& o) const {  // age_ms is a hint: not compared
    return instance == o.instance && advertise == o.advertise && heartbeat == o.heartbeat &&
           left == o.left;
  }
};

inline constexpr size_t kMaxInstanceIdBytes = 128;
inline constexpr uint32_t kMaxShards = 65536;

class ShardLeaseStore {
 public:
  virtual ~ShardLeaseStore() = default;

  // Creates the tables if missing, fixes the shard count at `shards` if the
  // cluster has none yet, and makes sure every shard has a row. Returns the
  // cluster's shard count (the one fixed first: later values are ignored).
  // REQUIRES: 1 <= shards <= kMaxShards.
  virtual Result<uint32_t> EnsureSchema(uint32_t shards) = 0;

  // Every lease row, by shard.
  virtual Result<std::vector<ShardLeaseRow>> ReadLeases() = 0;

  // Compare-and-set: if the row's version is `expected_version`, `owner`
  // takes it (epoch + 1, version + 1) and the new row is returned; else
  // kFailedPrecondition (someone renewed or took it meanwhile).
  virtual Result<ShardLeaseRow> Acquire(uint32_t shard, int64_t expected_version,
                                        std::string_view owner) = 0;

  // If `owner` still holds the row at `epoch`: version + 1, the new row.
  // Else kFailedPrecondition: fenced, the lease is lost.
  virtual Result<ShardLeaseRow> Renew(uint32_t shard, std::string_view owner, int64_t epoch) = 0;

  // Renews every row `owner` holds (whatever its epoch: only `owner` ever
  // sets its own id), version + 1 each, in one transaction; returns them.
  // Rows taken over meanwhile are simply not among them.
  virtual Result<std::vector<ShardLeaseRow>> RenewAll(std::string_view owner) = 0;

  // If `owner` holds the row at `epoch`: owner "" (version + 1); a later
  // taker may take it at once. Not holding it is not an error.
  virtual Status Release(uint32_t shard, std::string_view owner, int64_t epoch) = 0;

  // Batches, so a handoff of hundreds of shards costs one commit, not one
  // each (a planned handoff must finish in well under 100 ms).
  //
  // Release of every row of `held` (shard and epoch) `owner` still holds,
  // all or none.
  virtual Status ReleaseMany(std::string_view owner, const std::vector<ShardLeaseRow>& held);
  // Acquire of each (shard, expected version) of `wanted`: the rows taken,
  // by shard; those whose version moved (a lost race) or whose row is
  // locked by another transaction are left out, not errors. An error only
  // when the store failed and nothing was taken (this default stops at the
  // first failure and reports what it took before; a transactional store
  // takes all or nothing).
  virtual Result<std::vector<ShardLeaseRow>> AcquireMany(
      std::string_view owner, const std::vector<std::pair<uint32_t, int64_t>>& wanted);

  // Store groups' shard moves (docs/cluster.md, "Store groups"). Stores
  // without them answer kFailedPrecondition.
  //
  // Seals `shard`'s row: owner "", epoch + 1, version + 1, in one
  // transaction; a sealed row can never be taken nor fenced, so no write for
  // the shard commits in this database after it. Idempotent: a sealed row is
  // left as it is. `may_serve`: an owner may still be serving the shard from
  // memory until its lease runs out (the row was owned, or was sealed
  // before, when nobody knows): whoever serves it next waits as a taker of
  // a dead owner's row does (docs/cluster.md, "Clocks").
  struct Sealed {
    int64_t epoch = 0;
    bool may_serve = true;
  };
  virtual Result<Sealed> Seal(uint32_t shard) {
    (void)shard;
    return MakeError(ErrorCode::kFailedPrecondition, "this store cannot seal shards");
  }
  // The epoch of `shard`'s row if it is sealed; -1 if it is not.
  virtual Result<int64_t> SealedEpoch(uint32_t shard) {
    (void)shard;
    return MakeError(ErrorCode::kFailedPrecondition, "this store cannot seal shards");
  }
  // Makes `shard`'s row takeable here: created if missing, owner "",
  // unsealed, epoch at least `min_epoch` and above the row's own.
  virtual Status Open(uint32_t shard, int64_t min_epoch) {
    (void)shard, (void)min_epoch;
    return MakeError(ErrorCode::kFailedPrecondition, "this store cannot seal shards");
  }

  // One heartbeat of `instance` (created on first beat; clears `left`).
  virtual Status Heartbeat(std::string_view instance, std::string_view advertise) = 0;
  // A clean leave: `left` = 1, heartbeat + 1.
  virtual Status Leave(std::string_view instance) = 0;
  virtual Result<std::vector<ClusterMember>> ReadMembers() = 0;
  // Deletes `instance`'s member row if its heartbeat is still `heartbeat`
  // (one that beat meanwhile is kept; a later beat creates it again).
  // Forgetting an absent member is not an error.
  virtual Status Forget(std::string_view instance, int64_t heartbeat) = 0;
};

// Argument checks shared by the implementations.
namespace shard_lease {
Status CheckShards(uint32_t shards);
Status CheckInstance(std::string_view instance);
Error NotHeld(uint32_t shard);
Error VersionMoved(uint32_t shard, int64_t expected);
}  // namespace shard_lease

}  // namespace seqd
