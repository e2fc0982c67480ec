#include "server/cluster/shard_mover.h"

#include <chrono>
#include <thread>
#include <utility>

#include "server/base/log.h"

namespace seqd {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kCasTries = 20;
constexpr auto kGuardEvery = std::chrono::seconds(1);
constexpr auto kPausePoll = std::chrono::milliseconds(5);
constexpr auto kPauseGiveUp = std::chrono::seconds(10);

constexpr auto kSealTries = std::chrono::seconds(10);
constexpr auto kSealRetryEvery = std::chrono::milliseconds(20);

Error MoveError(ErrorCode code, uint32_t shard, const std::string& what) {
  return MakeError(code, "shard " + std::to_string(shard) + ": " + what);
}

}  // namespace

ShardMover::ShardMover(StorePlacement& placement, PlacementStore& home,
                       std::vector<ShardLeaseStore*> leases, std::vector<ShardDataStore*> data,
                       ShardMoverOptions options)
    : placement_(placement),
      home_(home),
      leases_(std::move(leases)),
      data_(std::move(data)),
      options_(std::move(options)) {}

ShardMover::~ShardMover() {
  stop_ = true;
  std::thread t;
  {
    MutexLock lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

PlacementView ShardMover::View() const {
  PlacementView v;
  v.groups = placement_.groups();
  v.map = placement_.map();
  MutexLock lock(mu_);
  v.mover = status_;
  return v;
}

Status ShardMover::StartMove(const MoveRequest& request) {
  const uint32_t shards = placement_.shards();
  if (shards == 0) {
    return MakeError(ErrorCode::kFailedPrecondition, "the cluster's tables are not read yet");
  }
  if (request.shard >= shards) {
    return MakeError(ErrorCode::kInvalidArgument, "shard must be below " + std::to_string(shards));
  }
  if (!request.undo && placement_.IndexOf(request.to) == StorePlacement::kUnknownGroup) {
    return MakeError(ErrorCode::kInvalidArgument, "unknown store group '" + request.to + "'");
  }
  if (request.rate < 0) return MakeError(ErrorCode::kInvalidArgument, "rate must be >= 0");
  MutexLock lock(mu_);
  if (status_.running) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "this instance is moving shard " + std::to_string(status_.shard));
  }
  if (thread_.joinable()) thread_.join();  // finished: running is false
  const int64_t done = status_.moves_done, failed = status_.moves_failed;
  status_ = MoverStatus{};
  status_.running = true;
  status_.shard = request.shard;
  status_.to = request.to;
  status_.phase = "starting";
  status_.moves_done = done;
  status_.moves_failed = failed;
  if (options_.metrics) options_.metrics->MoveRunning(true);
  thread_ = std::thread([this, request] { Run(request); });
  return OkStatus();
}

void ShardMover::Run(MoveRequest request) {
  Status s = Move(request);
  if (options_.metrics) {
    options_.metrics->MoveRunning(false);
    options_.metrics->MoveEnded(s.ok());
  }
  MutexLock lock(mu_);
  status_.running = false;
  if (s) {
    ++status_.moves_done;
    SEQD_LOG(kInfo) << "shard move: shard " << request.shard << " " << status_.phase;
  } else {
    ++status_.moves_failed;
    status_.phase = "failed";
    status_.error = s.error().message;
    SEQD_LOG(kWarn) << "shard move failed (re-run it to finish or undo): " << s.error().message;
  }
}

void ShardMover::SetPhase(const std::string& phase) {
  MutexLock lock(mu_);
  status_.phase = phase;
}

Result<std::pair<PlacementRow, int64_t>> ShardMover::ReadRow(uint32_t shard) {
  auto map = home_.ReadPlacement();
  if (!map) return map.error();
  PlacementRow row{shard, placement_.groups().front(), "", ""};
  for (const PlacementRow& r : map->rows) {
    if (r.shard == shard) row = r;
  }
  return std::make_pair(row, map->version);
}

Status ShardMover::Transition(const PlacementRow& from, const PlacementRow& to) {
  for (int i = 0; i < kCasTries; ++i) {
    auto now = ReadRow(from.shard);
    if (!now) return now.error();
    if (now->first != from) {
      return MoveError(ErrorCode::kFailedPrecondition, from.shard,
                       "its placement changed meanwhile (another mover?); re-run the move");
    }
    auto changed = home_.Change(now->second, to);
    if (changed) {
      // This instance follows its own changes at once, not at its next poll.
      if (options_.heard) options_.heard(*changed);
      return OkStatus();
    }
    if (changed.error().code != ErrorCode::kFailedPrecondition) return changed.error();
  }
  return MoveError(ErrorCode::kStoreUnavailable, from.shard, "the placement keeps changing");
}

Status ShardMover::Move(const MoveRequest& request) {
  const uint32_t shard = request.shard;
  auto read = ReadRow(shard);
  if (!read) return read.error();
  PlacementRow row = read->first;
  if (row.move_state.empty()) {
    if (request.undo) {
      return MoveError(ErrorCode::kFailedPrecondition, shard, "no move in progress to undo");
    }
    if (row.group == request.to) {
      SetPhase("done");
      return OkStatus();
    }
    const PlacementRow next{shard, row.group, request.to, "copying"};
    if (Status s = Transition(row, next); !s) return s;
    row = next;
  } else if (!request.undo && row.move_state != "cleanup" && row.move_target != request.to) {
    return MoveError(ErrorCode::kFailedPrecondition, shard,
                     "it is moving to '" + row.move_target + "': re-run with --to " +
                         row.move_target + ", or --undo");
  }
  {
    MutexLock lock(mu_);
    status_.from = row.move_state == "cleanup" ? row.move_target : row.group;
    status_.to = row.move_state == "cleanup" ? row.group : row.move_target;
  }
  if (row.move_state == "cleanup") {
    if (request.undo) {
      return MoveError(ErrorCode::kFailedPrecondition, shard,
                       "the move is done; move it back instead");
    }
    return Cleanup(row);
  }
  const size_t target = placement_.IndexOf(row.move_target);
  const size_t source = placement_.IndexOf(row.group);
  if (target == StorePlacement::kUnknownGroup || source == StorePlacement::kUnknownGroup) {
    return MoveError(ErrorCode::kFailedPrecondition, shard, "a group of the move is unknown here");
  }
  if (row.move_state == "sealed") {
    if (request.undo) {
      return MoveError(ErrorCode::kFailedPrecondition, shard,
                       "sealed in its old group: re-run without --undo to finish the move");
    }
    return Finish(row, request.rate);
  }
  // copying
  if (request.undo) {
    SetPhase("undoing");
    auto deleted = data_[target]->DeleteShard(shard, placement_.shards(),
                                              [this](int64_t) { return !stop_.load(); });
    if (!deleted) return deleted.error();
    // A mover that died between its seal and the "sealed" CAS left the
    // source sealed: open it again (the target's row was never opened).
    auto sealed = leases_[source]->SealedEpoch(shard);
    if (!sealed) return sealed.error();
    if (*sealed >= 0) {
      // Its owner before the seal may still serve from memory: wait as a
      // taker of a dead owner's row does before anyone may take it.
      const Steady::time_point until =
          Steady::now() +
          std::chrono::duration_cast<Steady::duration>(options_.lease * (1.0 + options_.max_drift));
      while (Steady::now() < until && !stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (stop_) return MakeError(ErrorCode::kShuttingDown, "shard move stopped");
      if (Status s = leases_[source]->Open(shard, *sealed + 1); !s) return s;
    }
    if (Status s = Transition(row, PlacementRow{shard, row.group, "", ""}); !s) return s;
    SetPhase("undone");
    return OkStatus();
  }
  SetPhase("copying");
  if (Status s = Copy(row, /*delta=*/false, request.rate); !s) return s;
  return Finish(row, request.rate);
}

Status ShardMover::Copy(const PlacementRow& row, bool delta, int64_t rate) {
  const size_t source = placement_.IndexOf(row.group);
  const size_t target = placement_.IndexOf(row.move_target);
  const Steady::time_point start = Steady::now();
  Steady::time_point guarded = start;
  int64_t rows = 0;
  Status guard = OkStatus();
  ShardDataStore::Pace pace = [&](int64_t n) {
    rows += n;
    if (options_.metrics) options_.metrics->RowsCopied(n);
    {
      MutexLock lock(mu_);
      status_.rows_copied += n;
    }
    if (rate > 0) {
      const auto due = start + std::chrono::microseconds(rows * 1'000'000 / rate);
      while (Steady::now() < due && !stop_)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (Steady::now() - guarded >= kGuardEvery) {
      // Another mover may have finished or undone this move meanwhile: a
      // stale copy must not go on writing into the target.
      guarded = Steady::now();
      auto now = ReadRow(row.shard);
      if (now && now->first.move_state != row.move_state) {
        guard = MoveError(ErrorCode::kFailedPrecondition, row.shard,
                          "its move changed meanwhile (another mover?)");
        return false;
      }
    }
    return !stop_.load();
  };
  auto stats =
      data_[source]->CopyShard(row.shard, placement_.shards(), *data_[target], delta, pace);
  if (!guard) return guard;
  if (!stats) return stats.error();
  MutexLock lock(mu_);
  status_.statements += stats->statements;
  return OkStatus();
}

Status ShardMover::Finish(PlacementRow row, int64_t rate) {
  (void)rate;  // the delta is copied at full speed: the shard is paused
  const uint32_t shard = row.shard;
  const size_t source = placement_.IndexOf(row.group);
  const size_t target = placement_.IndexOf(row.move_target);
  SetPhase("sealing");
  const Steady::time_point sent = Steady::now();
  auto sealed = SealRetrying(*leases_[source], shard);
  if (!sealed) return sealed.error();
  if (row.move_state != "sealed") {
    const PlacementRow next{shard, row.group, row.move_target, "sealed"};
    if (Status s = Transition(row, next); !s) return s;
    row = next;
  }
  SetPhase("delta");
  if (Status s = Copy(row, /*delta=*/true, 0); !s) return s;
  if (sealed->may_serve) {
    // An owner may serve from memory until its lease runs out: wait as a
    // taker of a dead owner's row does (server/cluster/shard_lease.h).
    const auto wait =
        std::chrono::duration_cast<Steady::duration>(options_.lease * (1.0 + options_.max_drift));
    while (Steady::now() < sent + wait && !stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (stop_) return MakeError(ErrorCode::kShuttingDown, "shard move stopped");
  }
  SetPhase("switching");
  if (Status s = leases_[target]->Open(shard, sealed->epoch + 1); !s) return s;
  const PlacementRow moved{shard, row.move_target, row.group, "cleanup"};
  if (Status s = Transition(row, moved); !s) return s;
  if (options_.nudge_all) options_.nudge_all();
  MeasurePause(shard, target, sent);
  return Cleanup(moved);
}

Result<ShardLeaseStore::Sealed> ShardMover::SealRetrying(ShardLeaseStore& leases, uint32_t shard) {
  const Steady::time_point give_up = Steady::now() + kSealTries;
  for (;;) {
    auto sealed = leases.Seal(shard);
    if (sealed || sealed.error().code != ErrorCode::kStoreUnavailable) return sealed;
    if (Steady::now() >= give_up || stop_) return sealed;
    std::this_thread::sleep_for(kSealRetryEvery);
  }
}

void ShardMover::MeasurePause(uint32_t shard, size_t group,
                              std::chrono::steady_clock::time_point sealed) {
  const Steady::time_point give_up = Steady::now() + kPauseGiveUp;
  while (Steady::now() < give_up && !stop_) {
    auto rows = leases_[group]->ReadLeases();
    if (rows) {
      for (const ShardLeaseRow& r : *rows) {
        if (r.shard != shard || r.owner.empty()) continue;
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - sealed).count();
        if (options_.metrics) options_.metrics->MovePause(static_cast<double>(ms) / 1000.0);
        MutexLock lock(mu_);
        status_.pause_ms = ms;
        SEQD_LOG(kInfo) << "shard move: shard " << shard << " served again " << ms
                        << " ms after its seal";
        return;
      }
    }
    std::this_thread::sleep_for(kPausePoll);
  }
}

Status ShardMover::Cleanup(PlacementRow row) {
  SetPhase("cleanup");
  // Every instance's map has moved on after a lease round; two leases
  // leave room for a round that failed.
  const Steady::time_point until = Steady::now() + 2 * options_.lease;
  while (Steady::now() < until && !stop_)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (stop_) return MakeError(ErrorCode::kShuttingDown, "shard move stopped");
  const size_t old_group = placement_.IndexOf(row.move_target);
  if (old_group == StorePlacement::kUnknownGroup) {
    return MoveError(ErrorCode::kFailedPrecondition, row.shard, "its old group is unknown here");
  }
  auto deleted = data_[old_group]->DeleteShard(row.shard, placement_.shards(),
                                               [this](int64_t) { return !stop_.load(); });
  if (!deleted) return deleted.error();
  if (Status s = Transition(row, PlacementRow{row.shard, row.group, "", ""}); !s) return s;
  SetPhase("done");
  return OkStatus();
}

}  // namespace seqd
