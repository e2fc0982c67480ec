// Memory for the allocator's KeyStates: blocks of one size carved from
// 64 KiB slabs, freed blocks kept on a free list for the next key. A key
// costs its size exactly (malloc adds a header and rounds up to 16 bytes:
// 216 -> 224), and keys are not interleaved with the short-lived
// allocations of the requests that bring them in (parked requests, timers),
// whose freed holes would otherwise stay resident between keys.
//
// Slabs are never returned to the system: the pool keeps the peak number
// of keys held (bounded by max_cached_keys) for the next ones.
//
// Thread safety: Allocate and Free are safe from any thread (one mutex;
// they run only when a key enters or leaves memory, never on the fast path).
#pragma once

#include <cstddef>

namespace seqd::allocator_internal {

class KeyStatePool {
 public:
  // REQUIRES: size <= kMaxBlock; the same size for every call (the pool's
  // block size is set by the first). Throws std::bad_alloc.
  static void* Allocate(size_t size);
  // REQUIRES: `p` came from Allocate and its object is destroyed.
  static void Free(void* p);

  // Blocks carved so far and blocks on the free list (tests).
  static size_t Carved();
  static size_t FreeBlocks();

  static constexpr size_t kMaxBlock = 1024;
  // Blocks are aligned to this much (no more: 216 bytes stay 216).
  static constexpr size_t kBlockAlign = 8;
};

}  // namespace seqd::allocator_internal
