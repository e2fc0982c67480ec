#include "server/base/malloc_tuning.h"

#include <malloc.h>

namespace seqd {

void TuneMallocForBursts() {
  constexpr int kMiB = 1 << 20;
  // Each call also turns off glibc's dynamic mmap threshold, so it is set
  // here too (default 128 KiB, then raised as large blocks are freed).
  mallopt(M_TRIM_THRESHOLD, 64 * kMiB);
  mallopt(M_TOP_PAD, 16 * kMiB);
  mallopt(M_MMAP_THRESHOLD, 4 * kMiB);
}

}  // namespace seqd
