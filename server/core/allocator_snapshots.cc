// SegmentAllocator: what admin pages and metrics see: a key's snapshot
// (buffers, step, recent rate, runway), the allocator's counters, and the
// per-key IDs-issued counter brought up to date.
#include <prometheus/counter.h>

#include <algorithm>

#include "common/mutex.h"
#include "server/core/segment_allocator.h"

namespace seqd {

using allocator_internal::kShardCount;

namespace {
// The rate is measured from the older of two samples at least this far
// apart: over the last 30 to 60 seconds, as samples are taken (every
// reservation, sweep and scrape).
constexpr Clock::Duration kRateSpacing = std::chrono::seconds(30);
}  // namespace

void SegmentAllocator::ReportIssuedLocked(const KeyState& state) const {
  // Modulo 2^32, exact (KeyState::reported).
  const auto issued = static_cast<uint32_t>(state.IssuedLocked());
  const uint32_t unreported = issued - state.reported;
  if (unreported == 0) return;
  // Taken since the last report: used at least as recently as the coarse
  // clock's last tick (the latest sweep or reservation).
  const uint32_t tick = CoarseSeconds();
  if (state.last_used.load(std::memory_order_relaxed) < tick) {
    state.last_used.store(tick, std::memory_order_relaxed);
  }
  // Issued > 0: the key was confirmed (IssuedCounters::For's precondition).
  if (prometheus::Counter* counter = issued_counters_.For(state.key, rules_.Match(state.key))) {
    counter->Increment(static_cast<double>(unreported));
  }
  state.reported = issued;
}

uint32_t SegmentAllocator::RateStamp(Clock::TimePoint t) const {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t - started_).count());
}

void SegmentAllocator::SampleRateLocked(const KeyState& s, Clock::TimePoint now) const {
  const uint32_t at = RateStamp(now);
  if (at - s.rate_at_ms[1] < static_cast<uint32_t>(kRateSpacing / std::chrono::milliseconds(1))) {
    return;
  }
  const int64_t issued = s.IssuedLocked();
  s.rate_at_ms[0] = s.rate_at_ms[1];
  s.rate_issued_between = static_cast<float>(issued - s.rate_issued);
  s.rate_at_ms[1] = at;
  s.rate_issued = issued;
}

KeySnapshot SegmentAllocator::SnapshotLocked(const KeyState& s) const {
  auto buffer = [](bool ready, const Buffer& b, int64_t used) {
    BufferSnapshot out;
    out.ready = ready && used < b.size();
    out.first = b.first;
    out.next = b.first + used;
    out.last = b.last;
    out.step = b.size();
    return out;
  };
  ReportIssuedLocked(s);  // the counters are current at every scrape
  KeySnapshot snap;
  snap.key = s.key;
  snap.auto_created = s.auto_created;
  snap.loading = s.loading;
  snap.current =
      buffer(s.has_current, s.has_current ? s.CurrentLocked() : Buffer{}, s.UsedLocked());
  snap.next = buffer(s.has_next, s.next, 0);
  snap.step = s.StepLocked();
  snap.table_step = s.TableStepLocked();
  snap.parked = static_cast<int64_t>(s.ParkedLocked());
  snap.reservations = s.reservations;
  if (s.wait) snap.last_error = s.wait->last_error;
  const Clock::TimePoint now = clock_.Now();
  snap.idle_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - LastUsedLocked(s)).count();
  SampleRateLocked(s, now);
  {
    const double secs = static_cast<double>(RateStamp(now) - s.rate_at_ms[0]) / 1000;
    const int64_t issued = s.IssuedLocked();
    const double since_first = static_cast<double>(issued - s.rate_issued) + s.rate_issued_between;
    if (secs > 0 && since_first > 0) snap.rate_per_s = since_first / secs;
  }
  if (snap.rate_per_s > 0) {
    const int64_t left = s.CurrentLeftLocked() + (s.has_next ? s.next.size() : 0);
    snap.runway_s = static_cast<double>(left) / snap.rate_per_s;
  }
  return snap;
}

std::vector<KeySnapshot> SegmentAllocator::Snapshot() const {
  std::vector<KeySnapshot> out;
  for (size_t i = 0; i < kShardCount; ++i) {
    Shard& shard = shards_[i];
    ReaderLock shard_lock(shard.mu);
    shard.keys.ForEach([&](KeyState* state) {
      LockGuard<TinyMutex> lock(state->mu);
      out.push_back(SnapshotLocked(*state));
    });
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

std::vector<KeySnapshot> SegmentAllocator::Snapshot(std::string_view after, size_t limit) const {
  std::vector<KeyRef> page;
  for (size_t i = 0; i < kShardCount; ++i) {
    Shard& shard = shards_[i];
    ReaderLock shard_lock(shard.mu);
    shard.keys.ForEach([&](KeyState* state) {
      if (state->key.view() > after) page.emplace_back(state);
    });
  }
  auto by_key = [](const auto& a, const auto& b) { return a->key.view() < b->key.view(); };
  if (page.size() > limit) {
    std::nth_element(page.begin(), page.begin() + static_cast<ptrdiff_t>(limit), page.end(),
                     by_key);
    page.resize(limit);
  }
  std::sort(page.begin(), page.end(), by_key);
  std::vector<KeySnapshot> out;
  out.reserve(page.size());
  for (const auto& state : page) {
    LockGuard<TinyMutex> lock(state->mu);
    out.push_back(SnapshotLocked(*state));
  }
  return out;
}

std::optional<KeySnapshot> SegmentAllocator::SnapshotKey(std::string_view key) const {
  KeyRef state = Find(key);
  if (!state) return std::nullopt;
  LockGuard<TinyMutex> lock(state->mu);
  return SnapshotLocked(*state);
}

AllocatorStats SegmentAllocator::stats() const {
  AllocatorStats st;
  st.reservations = reservations_;
  st.reservation_failures = reservation_failures_;
  st.parked_now = parked_now_;
  st.timeouts = timeouts_;
  st.parked_total = parked_total_.load(std::memory_order_relaxed);
  st.keys_in_memory = keys_held_;
  st.evicted_idle = evicted_idle_;
  st.evicted_capacity = evicted_capacity_;
  st.auto_create_refused = auto_create_refused_;
  for (size_t i = 0; i < kShardCount; ++i) {
    Shard& shard = shards_[i];
    ReaderLock lock(shard.mu);
    st.unknown_keys += static_cast<int64_t>(shard.unknown.size());
  }
  return st;
}

}  // namespace seqd
