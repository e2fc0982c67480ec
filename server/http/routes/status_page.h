// The human status page served at GET /: Leaf's /cache and /db pages in one
// self-contained HTML document (inline CSS, no scripts, no external assets).
//
// A pure function of its inputs, so tests need neither a server nor a store.
// Every string from the outside (keys, descriptions, error messages, the
// version) is HTML-escaped.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/service/cluster_api.h"
#include "server/service/id_api.h"
#include "server/service/key_admin_api.h"
#include "server/service/placement_api.h"
#include "server/service/snowflake_api.h"

namespace seqd {

// Below this runway a key is highlighted.
inline constexpr double kLowRunwaySeconds = 600;

struct StatusPageInput {
  std::string version;
  std::chrono::seconds uptime{0};
  // Store health (KeyAdmin::CheckStore); store_error is the public message.
  bool store_up = false;
  std::string store_error;
  // Keys held in memory (SegmentAllocator::Snapshot), any order.
  std::vector<KeySnapshot> snapshots;
  // The first page of registered keys (KeyAdmin::ListKeys), any order;
  // nullopt when the listing failed (rows_error says why) or was skipped.
  std::optional<std::vector<KeyRow>> rows;
  std::string rows_error;
  bool rows_truncated = false;  // more rows exist than were listed
  // The snowflake generator's state; nullopt when snowflake IDs are off.
  std::optional<SnowflakeStatus> snowflake;
  // The dense allocator's totals; nullopt when the page has none to show.
  std::optional<DenseStats> dense;
  // True for a dense key (KeyRouter::IsDense); unset: no key is dense.
  // Called while the page renders; must not block.
  std::function<bool(std::string_view)> is_dense;
  // Cluster mode's members and shard map; nullopt when cluster mode is off.
  struct Cluster {
    std::string instance;                             // this one
    std::shared_ptr<const ClusterSnapshot> snapshot;  // null until the tables were read
  };
  std::optional<Cluster> cluster;
  // Store groups' placement and this instance's mover; nullopt without
  // store groups.
  std::optional<PlacementView> placement;
  // Seconds between automatic reloads; 0: none.
  int refresh_s = 5;
};

// Escapes & < > " ' for element text and quoted attribute values.
std::string HtmlEscape(std::string_view s);

// "3d 4h 5m 6s" style, leading zero units dropped.
std::string FormatDuration(std::chrono::seconds d);

// The whole page, UTF-8.
std::string RenderStatusPage(const StatusPageInput& in);

}  // namespace seqd
