// What a take hands out: the IDs of one call, and the callback that gets
// them (SegmentAllocator::Take).
//
// Thread safety: values; one writer at a time.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>

#include "common/error.h"

namespace seqd {

// An inclusive range of IDs.
struct IdRange {
  int64_t first = 0;
  int64_t last = 0;
  int64_t size() const { return last - first + 1; }
  bool operator==(const IdRange&) const = default;
};

// The IDs of one call, as the contiguous ranges they span, in increasing order.
struct IdBatch {
  // Inline room for two ranges: a batch spans at most two segments unless it
  // is larger than a segment, so the hot path does not allocate.
  boost::container::small_vector<IdRange, 2> ranges;
  int64_t count() const;
};

using TakeCallback = std::function<void(Result<IdBatch>)>;

}  // namespace seqd
