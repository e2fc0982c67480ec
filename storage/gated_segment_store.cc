#include "storage/gated_segment_store.h"

namespace seqd {

std::vector<Result<ReservedSegment>> GatedSegmentStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  if (Status gate = Admit(); !gate.ok()) {
    return std::vector<Result<ReservedSegment>>(requests.size(), gate.error());
  }
  return inner_.ReserveMany(requests);
}

void GatedSegmentStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                                    const ReserveLanded& landed) {
  if (Status gate = Admit(); !gate.ok()) {
    for (size_t i = 0; i < requests.size(); ++i) landed(i, gate.error());
    return;
  }
  inner_.ReserveEach(requests, landed);
}

}  // namespace seqd
