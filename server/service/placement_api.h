// The seam's view of store groups (docs/cluster.md, "Store groups"): where
// each shard's rows are, and the shard mover that changes it
// (server/cluster/shard_mover.h implements it; null without store groups).
//
// Thread safety: every method is safe from any thread and never blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/store_placement.h"

namespace seqd {

// What a move asks (seqctl shard move).
struct MoveRequest {
  uint32_t shard = 0;
  std::string to;     // the target group; "" with undo
  bool undo = false;  // undo the move in progress (only before its seal)
  int64_t rate = 0;   // rows copied per second at most; 0: no limit
};

// The mover of this instance: its current or last move.
struct MoverStatus {
  bool running = false;
  uint32_t shard = 0;
  std::string from, to;
  std::string phase;  // copying, sealing, delta, switching, cleanup, done, undone, failed
  std::string error;  // why the last move stopped, if it failed
  int64_t rows_copied = 0;
  int64_t statements = 0;
  int64_t pause_ms = -1;  // seal to the target owner's lease; -1 until measured
  int64_t moves_done = 0;
  int64_t moves_failed = 0;
};

struct PlacementView {
  std::vector<std::string> groups;          // home first
  std::shared_ptr<const PlacementMap> map;  // rows: the shards not at home or moving
  MoverStatus mover;
};

class PlacementApi {
 public:
  virtual ~PlacementApi() = default;
  virtual PlacementView View() const = 0;
  // The placement version this instance read last: one atomic load. The
  // listeners tell it in their answers (an HTTP header, a binary PLACEMENT
  // push; docs/cluster.md, "Store groups").
  virtual int64_t version() const = 0;
  // A peer's request said its placement is at `version` (binary op
  // PLACEMENT): above version(), this instance reads the placement soon.
  virtual void Heard(int64_t version) = 0;
  // Starts moving `request.shard` (or resumes or undoes the move the home
  // database records for it) on the mover's thread. kInvalidArgument for a
  // bad shard or group; kFailedPrecondition while this instance's mover
  // runs another move.
  virtual Status StartMove(const MoveRequest& request) = 0;
};

}  // namespace seqd
