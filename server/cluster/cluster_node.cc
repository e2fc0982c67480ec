#include "server/cluster/cluster_node.h"

#include <chrono>

#include "server/base/log.h"
#include "server/base/log_throttle.h"
#include "server/cluster/shard_map.h"

namespace seqd {
namespace {

constexpr auto kStartRetry = std::chrono::seconds(1);
constexpr auto kLeaveNudgeWait = std::chrono::milliseconds(300);
// Nudges come in bursts (every peer after a move; requests that found the
// map stale): at most one round per kMinRoundSpacing, and at most one
// RefreshSoon() round per kRefreshSpacing (a dead owner's requests ask for
// one on every attempt until its leases run out).
constexpr auto kMinRoundSpacing = std::chrono::milliseconds(10);
constexpr auto kRefreshSpacing = std::chrono::milliseconds(50);

}  // namespace

ClusterNode::ClusterNode(ShardLeaseStore& store, const Clock& clock, ClusterNodeOptions options,
                         ClusterMetrics* metrics)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      placement_poll_(options_.placement_poll) {}

ClusterNode::~ClusterNode() { Stop(); }

void ClusterNode::Start(std::string advertise) {
  MutexLock lock(mu_);
  if (thread_.joinable() || stop_) return;
  keeper_ =
      std::make_unique<ClusterKeeper>(store_, clock_,
                                      ClusterKeeperOptions{options_.instance, std::move(advertise),
                                                           options_.shards, options_.timing});
  thread_ = std::thread([this] { Loop(); });
}

std::shared_ptr<const ClusterSnapshot> ClusterNode::snapshot() const {
  return ready() ? keeper_->snapshot() : nullptr;
}

void ClusterNode::Leave(std::function<void()> done) {
  {
    MutexLock lock(mu_);
    if (thread_.joinable() && !stop_) {
      leave_requested_ = true;
      leave_done_ = std::move(done);
      wake_.notify_all();
      return;
    }
  }
  if (done) done();  // never started, or already stopped: nothing to leave
}

void ClusterNode::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void ClusterNode::Nudge() {
  MutexLock lock(mu_);
  nudged_ = true;
  wake_.notify_all();
}

void ClusterNode::RefreshSoon() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_refresh_ns_.load(std::memory_order_relaxed);
  const int64_t spacing = std::chrono::nanoseconds(kRefreshSpacing).count();
  if (now - last < spacing || !last_refresh_ns_.compare_exchange_strong(last, now)) return;
  Nudge();
}

void ClusterNode::SetNudger(Nudger nudger) { nudger_ = std::move(nudger); }

void ClusterNode::SetPlacementReader(PlacementReader reader) {
  placement_reader_ = std::move(reader);
}

void ClusterNode::HeardPlacement(int64_t version) {
  if (!placement_reader_.read) return;
  if (placement_poll_.Heard(version, placement_reader_.version())) RefreshSoon();
}

Status ClusterNode::ReadPlacementIfDue(bool nudged) {
  if (!placement_reader_.read) return OkStatus();
  const Clock::TimePoint now = clock_.Now();
  if (!placement_poll_.Due(now, nudged, placement_reader_.version())) return OkStatus();
  Status s = placement_reader_.read();
  if (!s && s.error().code == ErrorCode::kFailedPrecondition) {
    // Read, but naming a group this instance was not configured with: its
    // shards are served by nobody here until the configuration is fixed.
    static LogThrottle throttle(std::chrono::seconds(60));
    if (throttle.Take()) SEQD_LOG(kWarn) << "cluster: " << s.error().message;
    s = OkStatus();
  }
  placement_poll_.Read(now, s.ok());
  return s;
}

void ClusterNode::SendNudges(bool wait) {
  struct Pending {
    Mutex mu;
    std::condition_variable done;
    size_t left GUARDED_BY(mu) = 0;
  };
  auto pending = std::make_shared<Pending>();
  for (const std::string& address : keeper_->TakeNudges()) {
    if (!nudger_ || address.empty()) continue;
    {
      MutexLock lock(pending->mu);
      ++pending->left;
    }
    nudger_(address, [pending] {
      MutexLock lock(pending->mu);
      if (--pending->left == 0) pending->done.notify_all();
    });
  }
  if (!wait) return;
  MutexLock lock(pending->mu);
  pending->done.wait_for(lock.native(), kLeaveNudgeWait,
                         [&]() REQUIRES(pending->mu) { return pending->left == 0; });
}

void ClusterNode::Loop() {
  const auto period =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.timing.lease) / 4;
  Clock::TimePoint last_warned{};
  bool nudged = false;  // the coming round was asked for (Nudge, RefreshSoon)
  for (;;) {
    std::function<void()> leave_done;
    bool leave = false;
    {
      MutexLock lock(mu_);
      if (stop_) return;
      leave = leave_requested_;
      leave_done = std::move(leave_done_);
    }
    if (leave) {
      if (ready()) {
        Status s = keeper_->Leave();
        if (!s) {
          SEQD_LOG(kWarn) << "cluster: leave: " << s.error().message;
        }
        if (metrics_) metrics_->HandoffsTo(keeper_->handoffs());
        SendNudges(/*wait=*/true);
        SEQD_LOG(kInfo) << "cluster: left; shards released";
      }
      {
        MutexLock lock(mu_);
        stop_ = true;
      }
      if (leave_done) leave_done();
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    Status s = OkStatus();
    if (!ready()) {
      s = keeper_->Start();
      if (s) {
        ready_.store(true, std::memory_order_release);
        SEQD_LOG(kInfo) << "cluster: tables ready, " << keeper_->shards() << " shards";
      }
    }
    if (s) {
      // The placement first, so the leases are read under the map it reads;
      // a failed read fails the round, whose renewals go on under the map
      // held.
      const Status placement = ReadPlacementIfDue(nudged);
      s = keeper_->Tick();
      if (s && !placement) s = placement;
    }
    SendNudges(/*wait=*/false);
    if (round_hook_) round_hook_();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!s && clock_.Now() - last_warned > std::chrono::seconds(10)) {
      last_warned = clock_.Now();
      SEQD_LOG(kWarn) << "cluster: lease round failed (shards stop serving at their deadlines): "
                      << s.error().message;
    }
    if (metrics_) {
      ClusterSnapshot::Counts c = keeper_->snapshot()->Count();
      metrics_->Round(static_cast<bool>(s), seconds, c.owned[options_.instance], c.live, c.unowned);
      metrics_->TakeoversTo(keeper_->takeovers());
      metrics_->HandoffsTo(keeper_->handoffs());
    }
    // The next round: a period from now, or sooner when a member is about
    // to be judged dead or a takeover wait ends (takeovers happen on time,
    // not up to a period late).
    Clock::Duration wait = ready() ? Clock::Duration(period) : Clock::Duration(kStartRetry);
    if (ready()) {
      const Clock::TimePoint now = clock_.Now();
      const Clock::TimePoint next = keeper_->NextEvent(now);
      if (next - now < wait) wait = next - now + std::chrono::milliseconds(1);
    }
    MutexLock lock(mu_);
    wake_.wait_for(lock.native(), wait,
                   [this]() REQUIRES(mu_) { return stop_ || leave_requested_ || nudged_; });
    const auto since = std::chrono::steady_clock::now() - started;
    if (since < kMinRoundSpacing) {
      wake_.wait_for(lock.native(), kMinRoundSpacing - since,
                     [this]() REQUIRES(mu_) { return stop_ || leave_requested_; });
    }
    nudged = nudged_;
    nudged_ = false;  // nudges until now are served by the coming round
  }
}

ShardGrant ClusterNode::Check(std::string_view key) const {
  if (!ready()) return {};
  const uint32_t shard = ShardOf(key, keeper_->shards());
  if (!keeper_->Serving(shard, clock_.Now())) return ShardGrant{shard, 0};
  return ShardGrant{shard, keeper_->Epoch(shard)};
}

void ClusterNode::Fenced(uint32_t shard, int64_t epoch) {
  keeper_->Fenced(shard, epoch);
  if (metrics_) metrics_->Fenced();
}

ShardRoute ClusterNode::Route(std::string_view key) const {
  ShardRoute r;
  if (!ready()) return r;
  r.shard = ShardOf(key, keeper_->shards());
  const auto snap = keeper_->snapshot();
  if (r.shard >= snap->shards.size()) return r;
  r.owner = snap->shards[r.shard].owner;
  r.released = r.owner.empty();
  auto m = snap->members.find(r.owner);
  if (r.owner.empty() || m == snap->members.end() || !m->second.live) {
    // Free, or its owner is gone: a takeover is under way, by the member
    // the round named. Send there: it serves once it holds the shard and
    // makes the request wait until then (if that is us, we wait ourselves).
    const std::string& next = snap->shards[r.shard].taker;
    if (!next.empty()) {
      r.owner = next;
      r.predicted = true;
      m = snap->members.find(next);
    }
  }
  r.mine = !r.owner.empty() && r.owner == options_.instance;
  if (m != snap->members.end()) {
    r.advertise = m->second.advertise;
    r.owner_live = m->second.live;
  }
  return r;
}

}  // namespace seqd
