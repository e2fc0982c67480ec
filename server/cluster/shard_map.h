// Cluster mode's key → shard → owner map (docs/cluster.md): every key hashes into one of a fixed number of shards, and each
// shard is assigned to one live member by rendezvous hashing, so every
// instance (and every client) computes the same map from the same members.
//
// The hash is part of the protocol: clients compute it too.
//   ShardOf(key)  = FNV-1a-64(key bytes) mod shards
//   Weight(m, s)  = SplitMix64(FNV-1a-64(member id bytes, 0x00, decimal s))
//   OwnerOf(s)    = the live member with the highest weight (ties: the
//                   smallest id)
// FNV-1a-64: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
// SplitMix64: z += 0x9e3779b97f4a7c15; z = (z ^ z>>30) * 0xbf58476d1ce4e5b9;
//             z = (z ^ z>>27) * 0x94d049bb133111eb; z ^ z>>31.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seqd {

inline constexpr uint32_t kDefaultShards = 1024;

uint64_t Fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);
uint64_t SplitMix64(uint64_t z);

// The shard of `key`. REQUIRES: shards >= 1.
uint32_t ShardOf(std::string_view key, uint32_t shards);

// The rendezvous weight of member `member_id` for `shard`.
uint64_t RendezvousWeight(std::string_view member_id, uint32_t shard);

// The owner of `shard` among `member_ids` (any order, no duplicates), or
// "" when there is none.
std::string OwnerOf(uint32_t shard, const std::vector<std::string>& member_ids);

// The owner of every shard in 0..shards-1 (one pass per shard).
std::vector<std::string> AssignShards(uint32_t shards, const std::vector<std::string>& member_ids);

}  // namespace seqd
