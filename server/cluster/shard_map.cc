#include "server/cluster/shard_map.h"

#include "proto/shard_hash.h"

namespace seqd {

uint64_t Fnv1a64(std::string_view bytes, uint64_t seed) { return proto::Fnv1a64(bytes, seed); }

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t ShardOf(std::string_view key, uint32_t shards) { return proto::ShardOfKey(key, shards); }

uint64_t RendezvousWeight(std::string_view member_id, uint32_t shard) {
  uint64_t h = Fnv1a64(member_id);
  h = Fnv1a64(std::string_view("\0", 1), h);
  h = Fnv1a64(std::to_string(shard), h);
  return SplitMix64(h);
}

std::string OwnerOf(uint32_t shard, const std::vector<std::string>& member_ids) {
  const std::string* best = nullptr;
  uint64_t best_weight = 0;
  for (const std::string& id : member_ids) {
    const uint64_t w = RendezvousWeight(id, shard);
    if (!best || w > best_weight || (w == best_weight && id < *best)) {
      best = &id;
      best_weight = w;
    }
  }
  return best ? *best : std::string();
}

std::vector<std::string> AssignShards(uint32_t shards, const std::vector<std::string>& member_ids) {
  std::vector<std::string> out;
  out.reserve(shards);
  for (uint32_t s = 0; s < shards; ++s) out.push_back(OwnerOf(s, member_ids));
  return out;
}

}  // namespace seqd
