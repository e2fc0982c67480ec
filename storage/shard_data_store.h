// One store group's rows of a cluster shard, as a shard move copies and
// removes them (docs/cluster.md, "Moving a shard"): every table whose rows
// belong to a key or a conversation (leaf_alloc, dense keys' block tokens
// and allocation times, min seqs, user seqs, messages, conversations and
// their members).
//
// Thread safety: safe from many threads. Calls BLOCK on I/O: run them on
// threads of their own, never on network threads.
#pragma once

#include <cstdint>
#include <functional>

#include "common/error.h"

namespace seqd {

struct ShardCopyStats {
  int64_t rows = 0;        // rows written to the target
  int64_t statements = 0;  // statements run (both sides)
};

class ShardDataStore {
 public:
  virtual ~ShardDataStore() = default;

  // Called after each batch with the rows it wrote; returning false stops
  // the copy (kShuttingDown). May sleep (a rate limit).
  using Pace = std::function<bool(int64_t rows)>;

  // Copies every row of `shard` (of `shards`) from this group to `to` in
  // batches, each an idempotent upsert in one transaction of `to`: the row
  // as it is here, except that a leaf_alloc max_id is never lowered. With
  // `delta`, messages at or below the target's max seq of their
  // conversation are copied only if recalled or deleted (their status can
  // change); every other table is copied whole again. REQUIRES: `to` is of
  // the same kind as this store.
  virtual Result<ShardCopyStats> CopyShard(uint32_t shard, uint32_t shards, ShardDataStore& to,
                                           bool delta, const Pace& pace) = 0;

  // Deletes every row of `shard` (of `shards`) here, in batches; returns how
  // many. The lease row is not touched.
  virtual Result<int64_t> DeleteShard(uint32_t shard, uint32_t shards, const Pace& pace) = 0;
};

}  // namespace seqd
