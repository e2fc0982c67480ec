// When a cluster instance with store groups reads the placement (docs/
// cluster.md, "Store groups"): the lease round that starts reads the home
// group's placement version (and the map, if it moved) when
//   - it never did, or its last read failed;
//   - `every` has passed since its last read (0: every round);
//   - the round was nudged (a move's switch nudges every instance; a join,
//     a leave or a request that found the map stale, too);
//   - a version above the one held was heard: from a peer's reply or a
//     peer's forwarded request (op PLACEMENT), or from this instance's own
//     mover, which just changed it.
// So an instance whose poll is long still follows a move at once, and one
// that missed a change learns of it from the first peer it talks to.
//
// Thread safety: Heard() and heard() are safe from any thread; Due() and
// Read() run on the cluster node's thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "server/base/clock.h"

namespace seqd {

class PlacementPoll {
 public:
  explicit PlacementPoll(Clock::Duration every) : every_(every) {}

  // `version` was heard while `held` is the version read last. True if it
  // is above both `held` and every version heard before: the caller wakes
  // a round. Never blocks.
  bool Heard(int64_t version, int64_t held);
  // Whether the round starting at `now` reads the placement.
  bool Due(Clock::TimePoint now, bool nudged, int64_t held) const;
  // The round starting at `now` read it (`ok`: it answered).
  void Read(Clock::TimePoint now, bool ok);
  // The highest version heard (0: none).
  int64_t heard() const { return heard_.load(std::memory_order_acquire); }

 private:
  const Clock::Duration every_;
  std::atomic<int64_t> heard_{0};
  bool read_ = false;  // a read answered
  bool failed_ = false;
  Clock::TimePoint last_read_{};
};

}  // namespace seqd
