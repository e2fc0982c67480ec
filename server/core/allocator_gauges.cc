#include "server/core/allocator_gauges.h"

namespace seqd {

AllocatorGauges CollectAllocatorGauges(const SegmentAllocator& allocator) {
  AllocatorGauges out;
  const AllocatorStats stats = allocator.stats();
  out.parked = stats.parked_now;
  out.keys_in_memory = stats.keys_in_memory;
  out.unknown_keys = stats.unknown_keys;
  out.evicted_idle = stats.evicted_idle;
  out.evicted_capacity = stats.evicted_capacity;
  out.auto_create_refused = stats.auto_create_refused;
  out.parked_total = stats.parked_total;
  std::vector<KeySnapshot> snapshot = allocator.Snapshot();
  out.keys.reserve(snapshot.size());
  for (const KeySnapshot& k : snapshot) {
    const AutoKeyRule* rule = allocator.rules().Match(k.key);
    // A key no rule matches is shown only once the store confirmed it: a
    // request for an unknown key is in memory while the store is asked.
    if (!rule && k.reservations == 0) continue;
    KeyGaugeInput g;
    g.label = KeyMetricLabel(k.key, rule);
    g.registered = !k.auto_created && g.label == k.key;
    g.step = k.step;
    if (k.current.ready) g.current_left = k.current.last - k.current.next + 1;
    if (k.next.ready) g.next_left = k.next.last - k.next.next + 1;
    g.next_ready = k.next.ready;
    g.rate_per_s = k.rate_per_s;
    out.keys.push_back(std::move(g));
  }
  return out;
}

}  // namespace seqd
