#include "server/cluster/cluster_keeper.h"

#include <algorithm>

#include "server/base/log.h"
#include "server/cluster/shard_map.h"

namespace seqd {

namespace {

// Wall time spent since `start` on the keeper's clock, for log lines.
int64_t MillisSince(Clock::TimePoint start, const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now() - start).count();
}

}  // namespace

ClusterKeeper::ClusterKeeper(ShardLeaseStore& store, const Clock& clock,
                             ClusterKeeperOptions options)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      snapshot_(std::make_shared<ClusterSnapshot>()) {}

Status ClusterKeeper::Start() {
  auto n = store_.EnsureSchema(options_.shards);
  if (!n) return n.error();
  shards_ = *n;
  holders_.clear();
  takeovers_.clear();
  for (uint32_t s = 0; s < shards_; ++s) {
    holders_.push_back(std::make_unique<ShardLeaseHolder>(options_.timing));
    takeovers_.emplace_back(options_.timing);
  }
  return OkStatus();
}

bool ClusterKeeper::Live(const std::string& id, const Watch& w, Clock::TimePoint now) const {
  if (w.left) return false;
  if (id == options_.instance) return true;
  return now < options_.timing.TakeoverAt(w.changed);
}

bool ClusterKeeper::Serving(uint32_t shard, Clock::TimePoint now) const {
  return shard < holders_.size() && holders_[shard]->Serving(now);
}

int64_t ClusterKeeper::Epoch(uint32_t shard) const {
  return shard < holders_.size() ? holders_[shard]->epoch() : 0;
}

void ClusterKeeper::Fenced(uint32_t shard, int64_t epoch) {
  if (shard < holders_.size() && epoch != 0 && holders_[shard]->epoch() == epoch) {
    holders_[shard]->Lost();
  }
}

std::shared_ptr<const ClusterSnapshot> ClusterKeeper::snapshot() const {
  MutexLock lock(snapshot_mu_);
  return snapshot_;
}

Status ClusterKeeper::Tick() {
  if (shards_ == 0) return MakeError(ErrorCode::kFailedPrecondition, "cluster: not started");
  const std::string& me = options_.instance;
  if (Status s = store_.Heartbeat(me, options_.advertise); !s) return s;

  // Members: liveness from heartbeats changing on our own clock.
  const Clock::TimePoint members_sent = clock_.Now();
  auto members = store_.ReadMembers();
  if (!members) return members.error();
  for (const ClusterMember& m : *members) {
    auto [it, first_sight] = watch_.try_emplace(m.instance);
    Watch& w = it->second;
    if (first_sight) w.first_seen = members_sent;
    if (w.heartbeat != m.heartbeat) {
      w.heartbeat = m.heartbeat;
      w.changed = members_sent;
      // Seen for the first time (we just started): a member whose row has
      // not beaten for longer than a takeover wait (by the store's clock,
      // whole seconds) is long dead; do not count it live for a lease and
      // hand it shards nobody will serve.
      const auto stale = std::chrono::duration_cast<Clock::Duration>(
          options_.timing.TakeoverAt(Clock::TimePoint{}).time_since_epoch() +
          std::chrono::seconds(1));
      if (first_sight && m.age_ms >= 0 && std::chrono::milliseconds(m.age_ms) > stale) {
        w.changed = members_sent - std::chrono::milliseconds(m.age_ms);
      }
    }
    w.advertise = m.advertise;
    w.left = m.left;
  }
  const Clock::TimePoint now = clock_.Now();
  std::vector<std::string> live, beating;
  for (const auto& [id, w] : watch_) {
    if (!Live(id, w, now)) continue;
    live.push_back(id);
    // Members beat every quarter lease (ClusterNode's round): one that was
    // not seen to beat for a round and a half is probably gone.
    if (id == me || now - w.changed <= options_.timing.lease * 3 / 8) beating.push_back(id);
  }

  // Renew everything we hold; whatever is not among the rows is lost.
  const Clock::TimePoint renew_sent = clock_.Now();
  auto owned = store_.RenewAll(me);
  if (!owned) return owned.error();
  std::vector<bool> still(shards_, false);
  for (const ShardLeaseRow& r : *owned) {
    if (r.shard >= shards_) continue;
    still[r.shard] = true;
    holders_[r.shard]->Granted(r.epoch, renew_sent);
  }
  for (uint32_t s = 0; s < shards_; ++s) {
    if (!still[s]) holders_[s]->Lost();
  }

  const Clock::TimePoint read_sent = clock_.Now();
  auto rows = store_.ReadLeases();
  if (!rows) return rows.error();
  auto snap = std::make_shared<ClusterSnapshot>();
  snap->shards.resize(shards_);
  bool moved = false;  // a shard changed hands: the others' maps are stale
  // Handoffs and takeovers are decided row by row, then done in one
  // transaction each: hundreds of shards move in one commit.
  std::vector<ShardLeaseRow> releasing;
  std::vector<std::pair<uint32_t, int64_t>> taking;
  for (ShardLeaseRow& row : *rows) {
    if (row.shard >= shards_) continue;
    const uint32_t s = row.shard;
    const bool desired = OwnerOf(s, live) == me;
    std::string taker;
    if (row.owner == me && !desired) {
      // Handoff: stop serving first, then free the row for its new owner.
      holders_[s]->Lost();
      releasing.push_back(row);
    } else if (row.owner != me) {
      // Every row not ours is watched, wanted or not, so a wait for a dead
      // owner runs from the first sight of its last version, not from the
      // moment the map gives us the shard.
      ShardTakeover& k = takeovers_[s];
      k.Observed(row.version, row.owner, read_sent);  // "" (released): no wait
      auto owner = watch_.find(row.owner);
      const bool owner_live = !row.owner.empty() && owner != watch_.end() &&
                              Live(row.owner, owner->second, clock_.Now());
      if (!owner_live) taker = TakerOf(row, k, beating, live);
      if (taker == me && k.MayTake(clock_.Now())) taking.emplace_back(s, k.expected_version());
    }
    snap->shards[s] = ClusterSnapshot::Shard{row.owner, row.epoch, taker};
  }
  if (!releasing.empty()) {
    const Clock::TimePoint sent = clock_.Now();
    if (Status st = store_.ReleaseMany(me, releasing); st) {
      SEQD_LOG(kInfo) << "cluster: released " << releasing.size() << " shards in "
                      << MillisSince(sent, clock_) << " ms";
      for (const ShardLeaseRow& row : releasing) {
        snap->shards[row.shard] = ClusterSnapshot::Shard{"", row.epoch, OwnerOf(row.shard, live)};
      }
      handoffs_done_ += static_cast<int64_t>(releasing.size());
      moved = true;  // the new owners take them now, not at their next round
    } else {
      SEQD_LOG(kWarn) << "cluster: releasing " << releasing.size()
                      << " shards: " << st.error().message;
    }
  }
  if (!taking.empty()) {
    const Clock::TimePoint sent = clock_.Now();
    auto taken = store_.AcquireMany(me, taking);
    if (taken) {
      SEQD_LOG(kInfo) << "cluster: took " << taken->size() << " of " << taking.size()
                      << " shards in " << MillisSince(sent, clock_) << " ms";
      for (const ShardLeaseRow& row : *taken) {
        holders_[row.shard]->Granted(row.epoch, sent);
        snap->shards[row.shard] = ClusterSnapshot::Shard{row.owner, row.epoch, ""};
      }
      takeovers_done_ += static_cast<int64_t>(taken->size());
      if (!taken->empty()) moved = true;
    } else {
      // Lost races are not errors; this is the store failing. The next
      // round tries again.
      SEQD_LOG(kWarn) << "cluster: taking " << taking.size()
                      << " shards: " << taken.error().message;
    }
  }
  if (moved) NudgeOthers(live);
  ForgetLongGone(*rows, now);
  if (!joined_) {
    // Our first round: the others learn of us at their next round and then
    // hand us our shards; wake them so that happens now.
    joined_ = true;
    NudgeOthers(live);
  }
  for (const auto& [id, w] : watch_) {
    snap->members[id] = ClusterSnapshot::Member{w.advertise, Live(id, w, now)};
  }
  MutexLock lock(snapshot_mu_);
  snapshot_ = std::move(snap);
  return OkStatus();
}

std::string ClusterKeeper::TakerOf(const ShardLeaseRow& row, const ShardTakeover& seen,
                                   const std::vector<std::string>& beating,
                                   const std::vector<std::string>& live) const {
  // A released row needs no wait: its owner among the members seen beating
  // takes it. Not among all live ones: a member that died just before we
  // joined still counts as live for a lease from our first sight of it
  // (the others, who watched it longer, already judged it dead and released
  // its shards to us), and would hold the rows up that long. Taking a free
  // row is always safe; if its owner-to-be was alive after all, we hand it
  // over at our next round.
  if (row.owner.empty()) return OwnerOf(row.shard, beating.empty() ? live : beating);
  // A dead owner's row: its owner among the live members we knew before we
  // first saw the row's last version. A member that joined after that (often
  // the dead one's replacement) first reads the row later and so would wait
  // longer; an earlier member takes it on time and hands it over at its next
  // round, with no wait. Views may differ (we do not know when the others
  // joined): two members then both try, and the compare-and-set on the
  // version lets one win. Someone always tries: each member's choice is the
  // highest-weighted member it knew of, so following choices only climbs in
  // weight and ends at a member that chooses itself.
  std::vector<std::string> earlier;
  for (const std::string& id : live) {
    auto w = watch_.find(id);
    if (w != watch_.end() && w->second.first_seen <= seen.seen_at()) earlier.push_back(id);
  }
  return OwnerOf(row.shard, earlier.empty() ? live : earlier);
}

void ClusterKeeper::NudgeOthers(const std::vector<std::string>& live) {
  for (const std::string& id : live) {
    auto w = watch_.find(id);
    if (id != options_.instance && w != watch_.end()) nudges_.push_back(w->second.advertise);
  }
}

void ClusterKeeper::ForgetLongGone(const std::vector<ShardLeaseRow>& rows, Clock::TimePoint now) {
  // Long enough that no takeover can still be waiting on the member.
  const Clock::Duration after =
      std::max<Clock::Duration>(std::chrono::seconds(60), 20 * options_.timing.lease);
  for (auto it = watch_.begin(); it != watch_.end();) {
    const std::string& id = it->first;  // not a structured binding: lambdas capture it
    const Watch& w = it->second;
    const bool owns = std::any_of(rows.begin(), rows.end(),
                                  [&](const ShardLeaseRow& r) { return r.owner == id; });
    if (id == options_.instance || owns || now - w.changed < after) {
      ++it;
      continue;
    }
    if (Status s = store_.Forget(id, w.heartbeat); !s) return;  // next round
    it = watch_.erase(it);
  }
}

Status ClusterKeeper::Leave() {
  const std::string& me = options_.instance;
  for (auto& h : holders_) h->Lost();
  auto rows = store_.ReadLeases();
  if (!rows) return rows.error();
  Status result = OkStatus();
  // The map as it will be: our shards go to their owners among the others.
  const Clock::TimePoint now = clock_.Now();
  std::vector<std::string> others;
  for (const auto& [id, w] : watch_) {
    if (id != me && Live(id, w, now)) others.push_back(id);
  }
  auto snap = std::make_shared<ClusterSnapshot>();
  snap->shards.resize(shards_);
  std::vector<ShardLeaseRow> releasing;
  for (const ShardLeaseRow& row : *rows) {
    if (row.shard >= shards_) continue;
    std::string owner = row.owner;
    if (row.owner == me) {
      releasing.push_back(row);
      owner = OwnerOf(row.shard, others);
    }
    snap->shards[row.shard] = ClusterSnapshot::Shard{owner, row.epoch, ""};
  }
  if (Status s = store_.ReleaseMany(me, releasing); !s) {
    result = s;
  } else {
    handoffs_done_ += static_cast<int64_t>(releasing.size());
  }
  if (Status s = store_.Leave(me); !s) result = s;
  // Requests still arriving here go to the successors; wake them so they
  // take the shards now rather than at their next round.
  for (const std::string& id : others) {
    const Watch& w = watch_[id];
    snap->members[id] = ClusterSnapshot::Member{w.advertise, true};
    nudges_.push_back(w.advertise);
  }
  snap->members[me] = ClusterSnapshot::Member{options_.advertise, false};
  MutexLock lock(snapshot_mu_);
  snapshot_ = std::move(snap);
  return result;
}

Clock::TimePoint ClusterKeeper::NextEvent(Clock::TimePoint now) const {
  Clock::TimePoint next = Clock::TimePoint::max();
  auto consider = [&](Clock::TimePoint t) {
    if (t > now && t < next) next = t;
  };
  for (const auto& [id, w] : watch_) {
    if (id != options_.instance && !w.left) consider(options_.timing.TakeoverAt(w.changed));
  }
  for (const ShardTakeover& k : takeovers_) {
    if (k.observed()) consider(k.may_take_at());
  }
  return next;
}

std::vector<std::string> ClusterKeeper::TakeNudges() {
  std::vector<std::string> out;
  out.swap(nudges_);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace seqd
