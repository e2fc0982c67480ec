#include "server/cluster/placement_poll.h"

namespace seqd {

bool PlacementPoll::Heard(int64_t version, int64_t held) {
  if (version <= held) return false;
  int64_t before = heard_.load(std::memory_order_acquire);
  while (version > before) {
    if (heard_.compare_exchange_weak(before, version, std::memory_order_acq_rel)) return true;
  }
  return false;
}

bool PlacementPoll::Due(Clock::TimePoint now, bool nudged, int64_t held) const {
  if (!read_ || failed_ || nudged) return true;
  if (every_ == Clock::Duration::zero() || now - last_read_ >= every_) return true;
  return heard() > held;
}

void PlacementPoll::Read(Clock::TimePoint now, bool ok) {
  failed_ = !ok;
  if (!ok) return;
  read_ = true;
  last_read_ = now;
}

}  // namespace seqd
