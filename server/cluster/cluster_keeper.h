// Cluster mode's membership and shard leases for one instance (the time
// rules: shard_lease.h; the tables: storage/shard_lease_store.h).
//
// Each Tick(): heartbeat; read the members and judge who is live by watching
// their heartbeats change on our own monotonic clock (a member is dead after
// lease*(1+drift) without a change, or at once after a clean leave); renew
// every shard we hold (one statement, the request's send time extends each
// holder); read the lease rows; hand off shards the rendezvous map gives to
// someone else (stop serving, then release); take free shards at once and
// shards of dead owners once ShardTakeover allows (a CAS on the version
// seen); forget members gone for long; publish the map.
//
// server/cluster/cluster_node.h runs Tick() on a thread of its own; the
// allocator asks Serving() (through ShardGate) before answering for a key.
//
// Thread safety: Start(), Tick() and Leave() block on the store and run on
// one thread at a time (a database thread). Serving() and snapshot() are
// safe from any thread (atomics and an atomically swapped snapshot).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/cluster/shard_lease.h"
#include "server/service/cluster_api.h"
#include "storage/shard_lease_store.h"

namespace seqd {

struct ClusterKeeperOptions {
  std::string instance;    // this process's id (unique per process)
  std::string advertise;   // its binary-protocol address, host:port
  uint32_t shards = 1024;  // used only if the cluster has none fixed yet
  LeaseTiming timing;
};

class ClusterKeeper {
 public:
  // `store` and `clock` must outlive the keeper.
  ClusterKeeper(ShardLeaseStore& store, const Clock& clock, ClusterKeeperOptions options);

  // Creates the tables and learns the cluster's shard count.
  Status Start();
  // One round (see the file comment). An error leaves the holders as they
  // are: they stop serving by themselves when their deadlines pass.
  Status Tick() EXCLUDES(snapshot_mu_);
  // A clean leave: stop serving every shard, release each, mark left, and
  // publish the map with each released shard at its next owner (requests
  // still arriving are forwarded there).
  Status Leave() EXCLUDES(snapshot_mu_);
  // The addresses of members to wake now (ClusterNode sends them
  // CLUSTER_NUDGE): after our first round (join), after a takeover or a
  // handoff, after Leave (every live member). Cleared by the call.
  std::vector<std::string> TakeNudges();

  uint32_t shards() const { return shards_; }
  // True while this instance may answer for `shard` from memory.
  bool Serving(uint32_t shard, Clock::TimePoint now) const;
  // The epoch this instance holds `shard` at (meaningful while Serving).
  int64_t Epoch(uint32_t shard) const;
  // A fenced write found `shard` no longer ours at `epoch`: stop serving it.
  // Safe from any thread; at worst it stops a newer grant until the next
  // renewal (stopping is always safe).
  void Fenced(uint32_t shard, int64_t epoch);
  // The next moment a round could change something without news from the
  // store: a member judged dead, or a takeover wait ending; after `now`, or
  // TimePoint::max() if none. Call between rounds, on the rounds' thread.
  Clock::TimePoint NextEvent(Clock::TimePoint now) const;
  // Shards taken over (acquired by compare-and-set) since start.
  int64_t takeovers() const { return takeovers_done_.load(std::memory_order_relaxed); }
  // Shards released (handed to their new owner, or on leave) since start.
  int64_t handoffs() const { return handoffs_done_.load(std::memory_order_relaxed); }
  std::shared_ptr<const ClusterSnapshot> snapshot() const EXCLUDES(snapshot_mu_);

 private:
  struct Watch {  // a member as we last saw it
    int64_t heartbeat = -1;
    Clock::TimePoint changed{};
    Clock::TimePoint first_seen{};
    std::string advertise;
    bool left = false;
  };

  bool Live(const std::string& id, const Watch& w, Clock::TimePoint now) const;
  // Who takes over `row`, whose owner is not live, in our view; see the
  // definition.
  // `beating`: the live members seen to beat within the last 3/8 lease
  // (and us).
  std::string TakerOf(const ShardLeaseRow& row, const ShardTakeover& seen,
                      const std::vector<std::string>& beating,
                      const std::vector<std::string>& live) const;
  // Wakes every live member but us (their maps are stale after a takeover
  // or handoff).
  void NudgeOthers(const std::vector<std::string>& live);
  // Deletes the rows of members unchanged for a long time that own no
  // shard (a later beat of theirs would create the row again).
  void ForgetLongGone(const std::vector<ShardLeaseRow>& rows, Clock::TimePoint now);

  ShardLeaseStore& store_;
  const Clock& clock_;
  const ClusterKeeperOptions options_;
  uint32_t shards_ = 0;
  std::vector<std::unique_ptr<ShardLeaseHolder>> holders_;  // by shard; sized by Start
  std::vector<ShardTakeover> takeovers_;  // by shard: each row not ours, as last seen
  std::atomic<int64_t> takeovers_done_{0};
  std::atomic<int64_t> handoffs_done_{0};
  bool joined_ = false;                 // a first round has succeeded
  std::vector<std::string> nudges_;     // see TakeNudges()
  std::map<std::string, Watch> watch_;  // by instance
  mutable Mutex snapshot_mu_;
  std::shared_ptr<const ClusterSnapshot> snapshot_ GUARDED_BY(snapshot_mu_);
};

}  // namespace seqd
