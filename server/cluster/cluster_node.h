// One instance's part in cluster mode (docs/cluster.md): runs the
// ClusterKeeper on a thread of its own, on its own database connection, so
// a flood of reservations never delays a lease renewal; answers the
// allocator's ShardGate questions; tells the router where a key's owner is.
//
// The thread: ClusterKeeper::Start() (retried every second until the
// database answers), then Tick() every lease/4, sooner when a takeover wait ends or when
// nudged (at most one round per 10 ms); on Leave(), a clean leave
// (every shard released at once, so its next owner takes it without a lease
// wait). With store groups, a round first reads the placement when its
// PlacementPoll says so (server/cluster/placement_poll.h).
//
// Thread safety: every public method is safe from any thread. Check(),
// Route() and snapshot() never block; Stop() joins the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/cluster/cluster_keeper.h"
#include "server/cluster/cluster_metrics.h"
#include "server/cluster/placement_poll.h"
#include "server/core/shard_gate.h"

namespace seqd {

struct ClusterNodeOptions {
  std::string instance;  // unique per process
  uint32_t shards = 1024;
  LeaseTiming timing;
  // Store groups: how often a round reads the placement on its own; 0:
  // every round (PlacementPoll).
  std::chrono::milliseconds placement_poll{0};
};

// Store groups: how the node reads the placement. Both set, or neither.
struct PlacementReader {
  std::function<Status()> read;      // blocks; kFailedPrecondition: read, a group unknown here
  std::function<int64_t()> version;  // the version read last; never blocks
};

// Where a key goes now, as of the latest round.
struct ShardRoute {
  uint32_t shard = 0;
  std::string owner;      // instance id; "" while free
  std::string advertise;  // the owner's address; "" if unknown
  bool owner_live = false;
  bool mine = false;       // the owner is this instance
  bool predicted = false;  // no live owner in the map: `owner` is the member taking it over
  bool released = false;   // the row was free in the map (a handoff under way)
};

class ClusterNode final : public ShardGate, public ClusterApi {
 public:
  // `store` and `clock` must outlive the node; `metrics` may be null.
  ClusterNode(ShardLeaseStore& store, const Clock& clock, ClusterNodeOptions options,
              ClusterMetrics* metrics);
  ~ClusterNode() override;  // Stop()
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Starts the thread; `advertise` is this instance's binary-protocol
  // address (known once the listener is bound). Call once.
  void Start(std::string advertise) EXCLUDES(mu_);
  // Stops serving every shard and releases it, marks this member left,
  // then runs `done` on the node's thread. Later rounds stop.
  void Leave(std::function<void()> done) EXCLUDES(mu_);
  // Ends the thread (without leaving, unless Leave ran). Idempotent.
  void Stop() EXCLUDES(mu_);

  // Runs a round now (another instance released shards for us, joined, or
  // is leaving: op CLUSTER_NUDGE). Never blocks.
  void Nudge() override EXCLUDES(mu_);
  // A request found the map stale (the member it names as owner said it is
  // not, or did not answer): run a round soon, at most one per 50 ms for
  // these. Never blocks.
  void RefreshSoon() EXCLUDES(mu_);
  // How this node wakes others (see ClusterKeeper::TakeNudges): called on
  // the node's thread with an advertised address and a callback to run once
  // the nudge was answered (or failed); must not block. Set before Start().
  using Nudger = std::function<void(const std::string& address, std::function<void()> answered)>;
  void SetNudger(Nudger nudger);
  // Runs after every round, on the node's thread (store groups: the
  // placement version's gauge); must not block. Set before Start().
  void SetRoundHook(std::function<void()> hook) { round_hook_ = std::move(hook); }
  // Store groups: reads the placement before a round when the poll says so
  // (options().placement_poll). Set before Start().
  void SetPlacementReader(PlacementReader reader);
  // Store groups: a peer (its reply or its request), or this instance's
  // mover, said the placement is at `version`. Above the version read
  // last, a round reads it soon (as RefreshSoon). Never blocks; nothing
  // without a reader.
  void HeardPlacement(int64_t version);

  // ShardGate.
  ShardGrant Check(std::string_view key) const override;
  const std::string& instance() const override { return options_.instance; }
  void Fenced(uint32_t shard, int64_t epoch) override;

  // False until the cluster tables have been read once.
  bool ready() const override { return ready_.load(std::memory_order_acquire); }
  uint32_t shards() const override { return ready() ? keeper_->shards() : 0; }
  ShardRoute Route(std::string_view key) const;
  // Null until ready().
  std::shared_ptr<const ClusterSnapshot> snapshot() const override;
  std::chrono::milliseconds lease() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.timing.lease);
  }
  double max_drift() const override { return options_.timing.max_drift; }
  const ClusterNodeOptions& options() const { return options_; }

 private:
  void Loop() EXCLUDES(mu_);
  // Sends the keeper's nudges; with `wait`, blocks until they were
  // answered, at most kLeaveNudgeWait (a leaving process must not exit
  // before its successors were woken).
  void SendNudges(bool wait);
  // Reads the placement if the round (`nudged` or not) should: Ok, or why
  // the read failed (kFailedPrecondition, a group unknown here, is logged
  // and counts as read).
  Status ReadPlacementIfDue(bool nudged);

  ShardLeaseStore& store_;
  const Clock& clock_;
  const ClusterNodeOptions options_;
  ClusterMetrics* const metrics_;
  std::unique_ptr<ClusterKeeper> keeper_;  // set by Start(); read by others once ready_
  std::atomic<bool> ready_{false};
  Mutex mu_;
  std::condition_variable wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::function<void()> leave_done_ GUARDED_BY(mu_);  // set: leave next
  bool leave_requested_ GUARDED_BY(mu_) = false;
  bool nudged_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> last_refresh_ns_{0};  // steady_clock, the last RefreshSoon() honoured
  Nudger nudger_;                            // set before Start()
  std::function<void()> round_hook_;         // set before Start()
  PlacementReader placement_reader_;         // set before Start()
  PlacementPoll placement_poll_;
  std::thread thread_;
};

}  // namespace seqd
