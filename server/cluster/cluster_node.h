// One instance's part in cluster mode (docs/cluster.md): runs the
// ClusterKeeper on a thread of its own, on its own database connection, so
// a flood of reservations never delays a lease renewal; answers the
// allocator's ShardGate questions; tells the router where a key's owner is.
//
// The thread: ClusterKeeper::Start() (retried every second until the
// database answers), then Tick() every lease/4, sooner when a takeover wait ends or when
// nudged (at most one round per 10 ms); on Leave(), a clean leave
// (every shard released at once, so its next owner takes it without a lease
// wait).
//
// Thread safety: every public method is safe from any thread. Check(),
// Route() and snapshot() never block; Stop() joins the thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/cluster/cluster_keeper.h"
#include "server/cluster/cluster_metrics.h"
#include "server/core/shard_gate.h"

namespace seqd {

struct ClusterNodeOptions {
  std::string instance;  // unique per process
  uint32_t shards = 1024;
  LeaseTiming timing;
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
  std::thread thread_;
};

}  // namespace seqd
