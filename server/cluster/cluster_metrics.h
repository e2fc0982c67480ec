// Cluster mode's Prometheus series (docs/metrics.md, "Cluster"), registered
// on the process's registry.
//
// Thread safety: every method is safe from any thread (prometheus-cpp
// counters and gauges are atomic).
#pragma once

#include <cstdint>

#include "server/metrics/series.h"  // names the prometheus classes held here

namespace seqd {

class ClusterMetrics {
 public:
  explicit ClusterMetrics(prometheus::Registry& registry);

  // One keeper round (heartbeat, renewals, takeovers): how long it took,
  // whether it succeeded, and what this instance holds after it.
  void Round(bool ok, double seconds, int64_t shards_owned, int64_t members_live,
             int64_t shards_unowned);
  void TakeoversTo(int64_t total);  // the keeper's running count
  void HandoffsTo(int64_t total);
  void Fenced();  // a fenced reservation or commit rolled back
  // A request for another owner's key: forwarded (ok: answered; else the
  // peer could not be reached or was not the owner), or answered
  // WRONG_OWNER (a NO_FORWARD request), or made to wait for an owner.
  void Forwarded(bool ok);
  void WrongOwner();
  void WaitedForOwner();

  // Store groups (docs/cluster.md): the placement version this instance
  // last read, and its shard mover's moves.
  void PlacementVersion(int64_t version);
  void MoveRunning(bool running);
  void MoveEnded(bool ok);
  void RowsCopied(int64_t rows);
  void MovePause(double seconds);  // seal to the new owner's lease, last move
  // A write no lease fences refused: its shard's lease row was sealed in the
  // group this instance's placement named (storage/mysql/mysql_shard_guard.h).
  void MovedWriteRefused();
  // The same for a read.
  void MovedReadRefused();

 private:
  prometheus::Counter* rounds_ok_;
  prometheus::Counter* rounds_failed_;
  prometheus::Histogram* round_seconds_;
  prometheus::Gauge* shards_owned_;
  prometheus::Gauge* members_live_;
  prometheus::Gauge* shards_unowned_;
  prometheus::Counter* takeovers_;
  prometheus::Counter* handoffs_;
  prometheus::Counter* fenced_;
  prometheus::Counter* forwards_ok_;
  prometheus::Counter* forwards_failed_;
  prometheus::Counter* wrong_owner_;
  prometheus::Counter* owner_waits_;
  prometheus::Gauge* placement_version_;
  prometheus::Gauge* move_running_;
  prometheus::Counter* moves_ok_;
  prometheus::Counter* moves_failed_;
  prometheus::Counter* rows_copied_;
  prometheus::Gauge* move_pause_;
  prometheus::Counter* moved_writes_refused_;
  prometheus::Counter* moved_reads_refused_;
};

}  // namespace seqd
