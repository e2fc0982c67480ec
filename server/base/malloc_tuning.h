// glibc malloc settings for a server that allocates in bursts (a storm of
// new keys parks a request per key, on several threads' arenas).
//
// By default glibc gives the top of a heap back to the system whenever
// 128 KiB or more of it is free (madvise, then page faults and a TLB
// shootdown on every core the next time the heap grows): under a burst
// that happened on every few frees. Measured on SQLite new-key storms
// (bench/new_keys_bench.sh): 71k -> 94-106k new keys/s with the top kept.
// Memory is still given back: the server calls malloc_trim(0) once a
// minute (server/app.cc).
//
// Thread safety: call once at startup, before other threads exist.
#pragma once

namespace seqd {

// Keeps up to 64 MiB free at a heap's top, grows heaps 16 MiB ahead, and
// serves allocations up to 4 MiB from the heaps (larger ones are mapped
// and unmapped on their own).
void TuneMallocForBursts();

}  // namespace seqd
