#include "server/cluster/shard_lease.h"

#include <algorithm>

namespace seqd {
namespace {

Clock::Duration Scaled(Clock::Duration d, double factor) {
  return Clock::Duration(
      static_cast<Clock::Duration::rep>(static_cast<double>(d.count()) * factor));
}

}  // namespace

Clock::TimePoint LeaseTiming::HolderDeadline(Clock::TimePoint sent) const {
  return sent + Scaled(lease, 1.0 - max_drift);
}

Clock::TimePoint LeaseTiming::TakeoverAt(Clock::TimePoint seen) const {
  return seen + Scaled(lease, 1.0 + max_drift);
}

void ShardLeaseHolder::Granted(int64_t epoch, Clock::TimePoint sent) {
  epoch_.store(epoch, std::memory_order_relaxed);
  const auto until = timing_.HolderDeadline(sent).time_since_epoch().count();
  auto cur = deadline_ns_.load(std::memory_order_relaxed);
  while (until > cur && !deadline_ns_.compare_exchange_weak(cur, until)) {
  }
}

void ShardLeaseHolder::Lost() { deadline_ns_.store(0, std::memory_order_release); }

void ShardTakeover::Observed(int64_t version, const std::string& owner, Clock::TimePoint seen) {
  if (observed_ && version == version_) return;  // the wait runs from the first sight
  observed_ = true;
  version_ = version;
  seen_at_ = seen;
  may_take_at_ = owner.empty() ? seen : timing_.TakeoverAt(seen);
}

bool ShardTakeover::MayTake(Clock::TimePoint now) const { return observed_ && now >= may_take_at_; }

}  // namespace seqd
