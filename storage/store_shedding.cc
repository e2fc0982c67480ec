#include "storage/store_shedding.h"

namespace seqd {

Status SheddingSegmentStore::Admit() {
  if (ShedThisThread()) return ShedError();
  return OkStatus();
}

}  // namespace seqd
