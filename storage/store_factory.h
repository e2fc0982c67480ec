// Builds the stores named by the --store flag.
//
// Thread safety: OpenStore and OpenStores may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/message_store.h"
#include "storage/segment_store.h"
#include "storage/shard_data_store.h"
#include "storage/shard_lease_store.h"
#include "storage/store_placement.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class MysqlPool;
class GroupedShardLeaseStore;

// `spec` is one of
//   sqlite:PATH                        SqliteStore on PATH (parent dir created)
//   mysql://user:pass@host:port/db     MysqlStore (port defaults to 3306;
//                                      several hosts: host1:port,host2:port)
// Anything else is kInvalidArgument.
//
// sqlite: opens the file and runs EnsureSchema(); any failure is returned.
// mysql: only parses the URL. It does NOT connect and does NOT fail when the
// server is down: the server must start anyway and report not-ready
// (/readyz 503) until the database answers. The caller runs EnsureSchema()
// and Ping() once the database is reachable.
Result<std::unique_ptr<SegmentStore>> OpenStore(std::string_view spec);

// Every store of one seqd process, on one spec.
struct OpenedStores {
  // Wrapped in a SheddingSegmentStore (storage/store_shedding.h): calls
  // from work the database runner could not queue fail at once.
  std::unique_ptr<SegmentStore> segments;
  std::unique_ptr<MessageStore> messages;
  std::unique_ptr<WorkerLeaseStore> leases;  // null unless asked for
  // Cluster mode's lease tables (MySQL only; null unless asked for), on a
  // pool of one connection of its own: shard renewals wait for nothing.
  std::unique_ptr<ShardLeaseStore> shard_leases;
  // MySQL: `segments` and `messages` share one pool of `connections`; the
  // lease store has a pool of its own with one connection, so a flood of
  // store calls never delays a lease renewal. Null for SQLite.
  std::shared_ptr<MysqlPool> pool;
  std::shared_ptr<MysqlPool> lease_pool;
  std::shared_ptr<MysqlPool> cluster_pool;
  // Store groups (StoreNeeds::groups): where each shard's rows are, read by
  // `shard_leases` every lease round; `grouped_leases` is `shard_leases`,
  // with each group's own stores for the shard mover. Null with one group.
  std::shared_ptr<StorePlacement> placement;
  GroupedShardLeaseStore* grouped_leases = nullptr;
  // Each group's own stores, by group index (empty with one group); the
  // grouped stores above route to them and own them.
  std::vector<SegmentStore*> group_segments;
  std::vector<MessageStore*> group_messages;
  // Each group's rows of a shard, for the shard mover (empty with one group).
  std::vector<std::unique_ptr<ShardDataStore>> group_data;

  // EnsureSchema() of each store, stopping at the first error.
  Status EnsureSchemas();
};

struct StoreNeeds {
  int connections = 1;         // >= 1: the segment and message stores' pool
  bool worker_leases = false;  // snowflake worker ids
  // MySQL: how long a failed transaction may be retried, unless the URL
  // sets retry_budget_ms.
  int retry_budget_ms = 1000;
  // MySQL: the password, overriding the URL's (from a file or the
  // environment, so it need not be on a command line); empty: the URL's.
  std::string password;
  // Cluster mode: the shard lease store, whose retries must fit in a
  // fraction of the lease (kInvalidArgument on a store other than MySQL).
  bool cluster = false;
  int cluster_retry_budget_ms = 500;
  // Store groups (cluster mode, mysql:// only): name and URL of each, the
  // home group first; the spec is then ignored. Empty or one: the spec
  // alone, as a single group.
  std::vector<std::pair<std::string, std::string>> groups;
  // The cluster's key hash (proto/shard_hash.h's ShardOfKey). REQUIRED with
  // several groups.
  StorePlacement::ShardOfKey shard_of = nullptr;
};

// As OpenStore, for every store `needs` asks for.
Result<OpenedStores> OpenStores(std::string_view spec, const StoreNeeds& needs);

}  // namespace seqd
