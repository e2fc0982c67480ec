// The time rules of a shard lease in cluster mode, judged only with each
// instance's own monotonic clock and a stated bound on clock-rate drift; the
// wall clocks of the machines never need to agree.
//
// Assumption: every instance's monotonic clock runs within max_drift/2 of
// real time, so any two within max_drift of each other (default 1%: far
// above what even free-running quartz clocks drift).
//
// Holder: after a renewal (or the acquisition) whose request was SENT at
// `sent` on its own clock has committed, it serves the shard from memory
// until `sent + lease * (1 - max_drift)`, then stops, whatever happens to
// later renewals.
// Taker: it may take a shard over only after it READ the lease row at some
// version v (the read was sent at `seen`) and then waited
// `lease * (1 + max_drift)` on its own clock; the takeover is a
// compare-and-set on version v, so any renewal in between defeats it.
//
// Why no two instances serve one shard at once: the holder's last renewal
// committed before the taker's read returned version v, so it was sent
// before `seen`. The holder stops at most lease*(1-d) after that send on its
// clock, at most lease*(1-d)/(1-d/2) in real time; the taker starts at
// least lease*(1+d) after `seen` on its clock, at least lease*(1+d)/(1+d/2)
// in real time; (1-d)/(1-d/2) <= (1+d)/(1+d/2), so the holder stops first. The database transaction
// fences the rest (every write for a key also writes its shard's lease row, conditioned on owner
// and epoch).
//
// Thread safety: ShardLeaseHolder::Serving() may be called from any thread
// (one atomic load); the other methods from one thread at a time (the
// lease keeper's). ShardTakeover is not thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "server/base/clock.h"

namespace seqd {

struct LeaseTiming {
  Clock::Duration lease = std::chrono::seconds(3);
  double max_drift = 0.01;  // in [0, 0.5)

  // The last moment a holder may serve after a renewal sent at `sent`.
  Clock::TimePoint HolderDeadline(Clock::TimePoint sent) const;
  // The first moment a taker may CAS a row it read (request sent at `seen`).
  Clock::TimePoint TakeoverAt(Clock::TimePoint seen) const;
};

// One shard held by this instance.
class ShardLeaseHolder {
 public:
  explicit ShardLeaseHolder(LeaseTiming timing) : timing_(timing) {}

  // The lease is ours at `epoch`, by a request sent at `sent` (acquisition
  // or renewal). A later `sent` only ever extends the deadline.
  void Granted(int64_t epoch, Clock::TimePoint sent);
  // Fenced (the row is no longer ours) or released: stop at once.
  void Lost();

  // True while this instance may answer for the shard from memory.
  bool Serving(Clock::TimePoint now) const {
    return now.time_since_epoch().count() < deadline_ns_.load(std::memory_order_acquire);
  }
  int64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
  Clock::TimePoint deadline() const {
    return Clock::TimePoint(Clock::Duration(deadline_ns_.load(std::memory_order_acquire)));
  }

 private:
  const LeaseTiming timing_;
  std::atomic<int64_t> epoch_{0};
  std::atomic<Clock::Duration::rep> deadline_ns_{0};  // 0: not held
};

// A shard this instance wants (its rendezvous owner) but another holds.
class ShardTakeover {
 public:
  explicit ShardTakeover(LeaseTiming timing) : timing_(timing) {}

  // The row read by a request sent at `seen`: version `version`, owner
  // `owner` ("" after an explicit release: no wait). A changed version
  // restarts the wait.
  void Observed(int64_t version, const std::string& owner, Clock::TimePoint seen);
  // True once a CAS on expected_version() may be tried.
  bool MayTake(Clock::TimePoint now) const;
  int64_t expected_version() const { return version_; }
  // When MayTake() turns true, and when the version now expected was
  // first seen (meaningful once observed()).
  Clock::TimePoint may_take_at() const { return may_take_at_; }
  Clock::TimePoint seen_at() const { return seen_at_; }
  bool observed() const { return observed_; }

 private:
  const LeaseTiming timing_;
  bool observed_ = false;
  int64_t version_ = -1;
  Clock::TimePoint may_take_at_{};
  Clock::TimePoint seen_at_{};
};

}  // namespace seqd
