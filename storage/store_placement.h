// Store groups (docs/cluster.md, "Store groups"): which group's databases
// hold each cluster shard's rows, as this process last read it from the
// home group's placement tables (storage/placement_store.h).
//
// Groups are known by index: 0 is the home group (the first one
// configured), which also holds every shard without a placement row.
//
// Thread safety: every method is safe from any thread; reads take a short
// lock and copy nothing but a shared pointer, but version(), one atomic
// load (the listeners read it for every answer they send).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace seqd {

// kStoreUnavailable for a key whose group this instance does not know.
Error UnknownStoreGroup();
// The same for a shard.
Error UnknownGroupOf(uint32_t shard);

// One row of seqd_shard_placement. A shard without a row is in the home
// group, with no move under way.
struct PlacementRow {
  uint32_t shard = 0;
  std::string group;        // the group serving it
  std::string move_target;  // "" unless a move is under way
  std::string move_state;   // "" (none), "copying" or "sealed"

  bool operator==(const PlacementRow&) const = default;
};

// What found a placement view stale: a read or a write refused in a group
// its shard had left (storage/mysql/mysql_shard_guard.h).
enum class StaleAccess { kRead, kWrite };

// The whole map as the home group holds it.
struct PlacementMap {
  int64_t version = 0;             // +1 on every change (seqd_placement)
  std::vector<PlacementRow> rows;  // by shard
};

class StorePlacement {
 public:
  // The shard of a key among `shards` (the cluster's hash, proto/shard_hash.h,
  // given by the caller: storage does not include the protocol).
  using ShardOfKey = uint32_t (*)(std::string_view key, uint32_t shards);
  static constexpr size_t kUnknownGroup = static_cast<size_t>(-1);

  // REQUIRES: `groups` non-empty, names distinct; groups[0] is home.
  StorePlacement(std::vector<std::string> groups, ShardOfKey shard_of);

  const std::vector<std::string>& groups() const { return groups_; }
  // The index of the group named `name`, or kUnknownGroup.
  size_t IndexOf(std::string_view name) const;

  // The cluster's shard count, once known (before it: every key is home).
  void SetShards(uint32_t shards) EXCLUDES(mu_);
  uint32_t shards() const EXCLUDES(mu_);
  uint32_t ShardOf(std::string_view key) const EXCLUDES(mu_);

  // The group holding `shard` / `key`'s shard: an index into groups(), or
  // kUnknownGroup for a group this process was not configured with (or a
  // shard beyond the cluster's count).
  size_t GroupOfShard(uint32_t shard) const EXCLUDES(mu_);
  size_t GroupOfKey(std::string_view key) const EXCLUDES(mu_);

  // Replaces the map with `map`. Rows naming a group this process does not
  // know are kept (as kUnknownGroup: such shards are served by nobody here
  // and their calls fail) and returned as an error message for the log;
  // Ok otherwise.
  Status Apply(PlacementMap map) EXCLUDES(mu_);
  // The version of the map last applied.
  int64_t version() const { return version_.load(std::memory_order_acquire); }
  // The map last applied.
  std::shared_ptr<const PlacementMap> map() const EXCLUDES(mu_);

  // A read or write (`access`) found this view stale: the group it put a
  // shard in no longer holds the shard (storage/mysql/mysql_shard_guard.h).
  // Runs the hook set by SetStaleHook, which should have the map read again
  // soon. Never blocks, if the hook does not.
  void ReportStale(StaleAccess access) const EXCLUDES(mu_);
  // `hook` runs on the thread of the call that found the view stale; it
  // must not block. Empty: none.
  void SetStaleHook(std::function<void(StaleAccess)> hook) EXCLUDES(mu_);

 private:
  struct Index {
    uint32_t shards = 0;
    std::vector<size_t> group_of;  // by shard; empty: all home
  };
  std::shared_ptr<const Index> index() const EXCLUDES(mu_);

  const std::vector<std::string> groups_;
  const ShardOfKey shard_of_;
  mutable Mutex mu_;
  std::shared_ptr<const Index> index_ GUARDED_BY(mu_);
  std::shared_ptr<const PlacementMap> map_ GUARDED_BY(mu_);
  std::shared_ptr<const std::function<void(StaleAccess)>> stale_hook_ GUARDED_BY(mu_);
  std::atomic<int64_t> version_{0};  // map_->version, stored after map_
};

}  // namespace seqd
