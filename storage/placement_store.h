// The durable side of store groups (docs/cluster.md, "Store groups").
//
// In every group's database:
//   seqd_store_group     one row: the group's name, written on first use
//                        (an instance configured with another name for
//                        this database is refused)
// In the home group's database only:
//   seqd_placement       one row: version, +1 on every placement change
//   seqd_shard_placement shard (PK), group_name, move_target, move_state;
//                        a shard without a row is in the home group
//
// The map changes only by a compare-and-set on seqd_placement.version in one
// transaction of the home database: that row is the one serialization
// point, so two movers can never both win.
//
// Thread safety: every implementation is safe from many threads. Calls
// BLOCK on I/O: run them on database threads only.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "storage/store_placement.h"

namespace seqd {

class PlacementStore {
 public:
  virtual ~PlacementStore() = default;

  // Creates seqd_store_group if missing and records `name` in it if it holds
  // none. kFailedPrecondition if it holds another name (this database is
  // another group's).
  virtual Status ClaimGroup(std::string_view name) = 0;

  // Home group: creates the placement tables if missing (version 0, no rows).
  virtual Status EnsureSchema() = 0;
  // The placement version: one tiny read, made every lease round.
  virtual Result<int64_t> ReadVersion() = 0;
  // The version and every row, read in one transaction.
  virtual Result<PlacementMap> ReadPlacement() = 0;
  // Compare-and-set: if the version is `expected`, writes `row` (replacing
  // the shard's row) and raises the version by one, in one transaction;
  // returns the new version. kFailedPrecondition if the version moved.
  virtual Result<int64_t> Change(int64_t expected, const PlacementRow& row) = 0;
};

}  // namespace seqd
