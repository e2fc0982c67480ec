// The conformance suites' two-group backends: the grouped stores
// (storage/grouped_*_store.h) over two in-memory stores, odd shards (of 8)
// placed in the second group, so each check's keys and conversations land
// in both groups and every call is split and put back together.
//
// Test-only; include after <doctest/doctest.h> and the suite's backends
// header. Not thread-safe: as the other backends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proto/shard_hash.h"
#include "storage/grouped_message_store.h"
#include "storage/grouped_segment_store.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "storage/store_placement.h"

namespace seqd::conformance {

// Groups "home" and "b"; odd shards of 8 in "b".
inline std::shared_ptr<StorePlacement> TwoGroupPlacement() {
  auto placement =
      std::make_shared<StorePlacement>(std::vector<std::string>{"home", "b"}, &proto::ShardOfKey);
  placement->SetShards(8);
  PlacementMap map;
  map.version = 1;
  for (uint32_t s = 1; s < 8; s += 2) map.rows.push_back(PlacementRow{s, "b", "", ""});
  REQUIRE_OK(placement->Apply(map));
  return placement;
}

}  // namespace seqd::conformance
