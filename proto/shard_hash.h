// Cluster mode's key -> shard hash (docs/cluster.md), shared by the server
// and the client library so both compute the same shard:
//   ShardOfKey(key, shards) = FNV-1a-64(key bytes) mod shards
// FNV-1a-64: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace seqd::proto {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t seed = kFnvOffsetBasis) {
  uint64_t h = seed;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// REQUIRES: shards >= 1.
constexpr uint32_t ShardOfKey(std::string_view key, uint32_t shards) {
  return static_cast<uint32_t>(Fnv1a64(key) % shards);
}

static_assert(Fnv1a64("") == kFnvOffsetBasis);
static_assert(Fnv1a64("a") == 0xaf63dc4c8601ec8cull);  // the published FNV-1a-64 test vector

}  // namespace seqd::proto
