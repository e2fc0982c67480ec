// Load shedding for the segment store: every SheddingSegmentStore call on
// a thread marked by a ShedScope (common/shed_scope.h: its runner could not
// queue the work) fails at once with ShedError(), without touching the
// database.
//
// Thread safety: as safe as the store it wraps.
#pragma once

#include <memory>

#include "common/shed_scope.h"
#include "storage/gated_segment_store.h"

namespace seqd {

class SheddingSegmentStore final : public GatedSegmentStore {
 public:
  explicit SheddingSegmentStore(std::unique_ptr<SegmentStore> inner)
      : GatedSegmentStore(*inner), inner_(std::move(inner)) {}

 private:
  Status Admit() override;

  std::unique_ptr<SegmentStore> inner_;
};

}  // namespace seqd
