#include "server/core/allocator_gauges.h"

namespace seqd {

AllocatorGauges CollectAllocatorGauges(const SegmentAllocator& allocator) {
  AllocatorGauges out;
  out.parked = allocator.stats().parked_now;
  std::vector<KeySnapshot> snapshot = allocator.Snapshot();
  out.keys.reserve(snapshot.size());
  for (const KeySnapshot& k : snapshot) {
    KeyGaugeInput g;
    g.label = Metrics::KeyLabel(k.key, allocator.rules().Match(k.key));
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
