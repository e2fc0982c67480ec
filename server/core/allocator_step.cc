// SegmentAllocator: how many IDs the next reservation of a key asks for
// (the dynamic step; see segment_allocator.h), and the row's step as an
// admin call changes it.
#include <algorithm>
#include <cmath>

#include "common/mutex.h"
#include "server/core/segment_allocator.h"

namespace seqd {

int64_t SegmentAllocator::NextStepLocked(KeyState& state, int64_t demand) {
  const Clock::TimePoint now = clock_.Now();
  int64_t floor = std::max<int64_t>(state.TableStepLocked(), 1);
  int64_t step = state.StepLocked();
  if (step == 0) step = floor;
  // Leaf's rule: double while segments last less than segment_duration,
  // halve when one lasted more than twice that. The first reservation has
  // no previous segment to measure, the second a partial one.
  if (state.reservations >= 2) {
    const Clock::Duration lasted = now - state.last_reserved_at;
    if (lasted < options_.segment_duration) {
      step = std::min(step * 2, options_.max_step);
    } else if (lasted > 2 * options_.segment_duration) {
      step = step / 2;
    }
  }
  // Doubling alone is too slow from a cold start: size the step from what
  // we measured, so the next segment lands before the current one runs out
  // (what is left of it at the prefetch point must outlast a few
  // reservations) and the two buffers hold min_runway at the current rate.
  step = std::max(step, MeasuredStepLocked(state, now));
  // A table step above max_step wins: we never reserve less than the row says.
  const int64_t ceiling = std::max(options_.max_step, floor);
  step = std::clamp(step, floor, ceiling);
  state.SetStepLocked(step);
  return std::clamp(std::max(step, demand), floor, ceiling);
}

int64_t SegmentAllocator::MeasuredStepLocked(const KeyState& state, Clock::TimePoint now) const {
  if (state.reservations == 0) return 0;
  // The rate while IDs were there to take: since the latest segment landed
  // (the requests that waited for it included). Not over the wait itself:
  // a stalled client asks for little, and the rate would understate it.
  constexpr double kMinWindowSeconds = 0.0001;
  const double elapsed = std::max(
      kMinWindowSeconds, std::chrono::duration<double>(now - state.last_reserved_at).count());
  // Modulo 2^32 (KeyState::issued_at_landing).
  const uint32_t issued = static_cast<uint32_t>(state.IssuedLocked()) - state.issued_at_landing;
  const double rate = static_cast<double>(issued) / elapsed;
  // Four reservation latencies of margin: the database may slow down
  // further, and a failed reservation is retried after a backoff.
  constexpr double kLatencyMargin = 4;
  const double left_at_prefetch = 1.0 - options_.prefetch_fraction;
  const double for_latency = rate * kLatencyMargin *
                             allocator_internal::LatencyByte::Decode(state.reserve_latency) /
                             left_at_prefetch;
  // Both buffers together: about (2 - prefetch_fraction) steps.
  const double for_runway = rate * std::chrono::duration<double>(options_.min_runway).count() /
                            (2.0 - options_.prefetch_fraction);
  const double wanted = std::ceil(std::max(for_latency, for_runway));
  return wanted >= static_cast<double>(options_.max_step) ? options_.max_step
                                                          : static_cast<int64_t>(wanted);
}

void SegmentAllocator::OnTableStepChanged(std::string_view key, int64_t table_step) {
  KeyRef state = Find(key);
  if (!state) return;
  LockGuard<TinyMutex> lock(state->mu);
  state->SetTableStepLocked(table_step);
  state->SetStepLocked(std::max(state->StepLocked(), table_step));
}

}  // namespace seqd
