// What the allocator asks cluster mode about a key (docs/cluster.md): may
// this instance answer for the key now, and with which fence. Implemented by
// server/cluster/cluster_node.h; absent (nullptr) outside cluster mode.
//
// Thread safety: every method is safe from any thread and never blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace seqd {

// This instance's hold on one shard at one moment.
struct ShardGrant {
  uint32_t shard = 0;
  int64_t epoch = 0;  // 0: not held now; answer nothing for its keys
  bool serving() const { return epoch != 0; }
};

class ShardGate {
 public:
  virtual ~ShardGate() = default;

  // The hold on `key`'s shard now: its epoch while this instance may answer
  // from memory (its monotonic lease deadline has not passed), else epoch 0.
  // Cheap: a hash, two atomic loads and a clock read.
  virtual ShardGrant Check(std::string_view key) const = 0;

  // This instance's id, the owner named in every fence.
  virtual const std::string& instance() const = 0;

  // A fenced write found `shard` no longer ours at `epoch`: stop serving it
  // at once (the lease keeper learns the rest on its next round).
  virtual void Fenced(uint32_t shard, int64_t epoch) = 0;
};

}  // namespace seqd
