#include "server/cluster/cluster_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "server/metrics/series.h"

namespace seqd {
namespace {

prometheus::Counter* Counter(prometheus::Registry& r, const char* name, const char* help) {
  return &OneCounter(r, name, help);
}

prometheus::Gauge* Gauge(prometheus::Registry& r, const char* name, const char* help) {
  return &OneGauge(r, name, help);
}

// A counter family by result: sets `ok` and `failed` to its "ok" and
// "error" children.
void CountersByResult(prometheus::Registry& r, const char* name, const char* help,
                      prometheus::Counter*& ok, prometheus::Counter*& failed) {
  auto& family = CounterFamily(r, name, help);
  ok = &family.Add({{"result", "ok"}});
  failed = &family.Add({{"result", "error"}});
}

}  // namespace

ClusterMetrics::ClusterMetrics(prometheus::Registry& r) {
  CountersByResult(r, "seqd_cluster_rounds_total",
                   "Lease keeper rounds (heartbeat, renewals, takeovers) by result", rounds_ok_,
                   rounds_failed_);
  round_seconds_ = &prometheus::BuildHistogram()
                        .Name("seqd_cluster_round_seconds")
                        .Help("Duration of a lease keeper round, renewals included")
                        .Register(r)
                        .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.005, 0.01, 0.05,
                                                                         0.1, 0.25, 0.5, 1, 2.5});
  shards_owned_ = Gauge(r, "seqd_cluster_shards_owned", "Shards this instance serves now");
  members_live_ = Gauge(r, "seqd_cluster_members_live", "Members this instance sees as live");
  shards_unowned_ = Gauge(r, "seqd_cluster_shards_unowned",
                          "Shards whose lease row has no live owner, as this instance saw them");
  takeovers_ = Counter(r, "seqd_cluster_takeovers_total",
                       "Shards this instance acquired (free, or after a lease wait)");
  handoffs_ = Counter(r, "seqd_cluster_handoffs_total",
                      "Shards this instance released for another owner or on leave");
  fenced_ = Counter(r, "seqd_cluster_fenced_total",
                    "Reservations or commits rolled back because the shard lease moved");
  CountersByResult(r, "seqd_cluster_forwards_total",
                   "Requests forwarded to the key's owner, by result", forwards_ok_,
                   forwards_failed_);
  wrong_owner_ =
      Counter(r, "seqd_cluster_wrong_owner_total", "NO_FORWARD requests answered WRONG_OWNER");
  owner_waits_ = Counter(r, "seqd_cluster_owner_waits_total",
                         "Times a request waited for its key's shard to get an owner");
  placement_version_ = Gauge(r, "seqd_placement_version",
                             "Store groups: the placement version this instance last read");
  move_running_ = Gauge(r, "seqd_shard_move_running", "1 while this instance moves a shard");
  CountersByResult(r, "seqd_shard_moves_total", "Shard moves this instance ended, by result",
                   moves_ok_, moves_failed_);
  rows_copied_ = Counter(r, "seqd_shard_move_rows_copied_total",
                         "Rows this instance's shard moves copied to their target group");
  move_pause_ = Gauge(r, "seqd_shard_move_pause_seconds",
                      "The last move's pause: its seal to the new owner's lease");
  moved_writes_refused_ =
      Counter(r, "seqd_shard_move_writes_refused_total",
              "Unfenced writes refused (retryable) because their shard had left, or was "
              "leaving, the store group this instance's placement named");
  moved_reads_refused_ =
      Counter(r, "seqd_shard_move_reads_refused_total",
              "Reads refused (retryable) because their shard had left, or was leaving, the "
              "store group this instance's placement named");
}

void ClusterMetrics::Round(bool ok, double seconds, int64_t shards_owned, int64_t members_live,
                           int64_t shards_unowned) {
  (ok ? rounds_ok_ : rounds_failed_)->Increment();
  round_seconds_->Observe(seconds);
  shards_owned_->Set(static_cast<double>(shards_owned));
  members_live_->Set(static_cast<double>(members_live));
  shards_unowned_->Set(static_cast<double>(shards_unowned));
}

void ClusterMetrics::TakeoversTo(int64_t total) { CatchUp(takeovers_, total); }
void ClusterMetrics::HandoffsTo(int64_t total) { CatchUp(handoffs_, total); }
void ClusterMetrics::Fenced() { fenced_->Increment(); }
void ClusterMetrics::Forwarded(bool ok) { (ok ? forwards_ok_ : forwards_failed_)->Increment(); }
void ClusterMetrics::WrongOwner() { wrong_owner_->Increment(); }
void ClusterMetrics::WaitedForOwner() { owner_waits_->Increment(); }

void ClusterMetrics::PlacementVersion(int64_t version) {
  placement_version_->Set(static_cast<double>(version));
}

void ClusterMetrics::MoveRunning(bool running) { move_running_->Set(running ? 1 : 0); }

void ClusterMetrics::MoveEnded(bool ok) { (ok ? moves_ok_ : moves_failed_)->Increment(); }

void ClusterMetrics::RowsCopied(int64_t rows) {
  rows_copied_->Increment(static_cast<double>(rows));
}

void ClusterMetrics::MovePause(double seconds) { move_pause_->Set(seconds); }

void ClusterMetrics::MovedWriteRefused() { moved_writes_refused_->Increment(); }

void ClusterMetrics::MovedReadRefused() { moved_reads_refused_->Increment(); }

}  // namespace seqd
