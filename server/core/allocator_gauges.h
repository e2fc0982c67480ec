// What Metrics shows of the allocator at scrape time, built from its
// snapshot: the bridge that lets Metrics know nothing of the allocator.
//
// Thread safety: as SegmentAllocator::Snapshot() (any thread).
#pragma once

#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"

namespace seqd {

// Parked requests and one KeyGaugeInput per key in memory, labelled by
// KeyMetricLabel (auto-created keys by their rule).
AllocatorGauges CollectAllocatorGauges(const SegmentAllocator& allocator);

}  // namespace seqd
