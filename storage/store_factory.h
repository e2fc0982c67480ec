// Builds the stores named by the --store flag.
//
// Thread safety: OpenStore and OpenStores may be called from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "storage/message_store.h"
#include "storage/segment_store.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class MysqlPool;

// `spec` is one of
//   sqlite:PATH                        SqliteStore on PATH (parent dir created)
//   mysql://user:pass@host:port/db     MysqlStore (port defaults to 3306)
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
  std::unique_ptr<SegmentStore> segments;
  std::unique_ptr<MessageStore> messages;
  std::unique_ptr<WorkerLeaseStore> leases;  // null unless asked for
  // MySQL: `segments` and `messages` share one pool of `connections`; the
  // lease store has a pool of its own with one connection, so a flood of
  // store calls never delays a lease renewal. Null for SQLite.
  std::shared_ptr<MysqlPool> pool;
  std::shared_ptr<MysqlPool> lease_pool;

  // EnsureSchema() of each store, stopping at the first error.
  Status EnsureSchemas();
};

// As OpenStore, for all three stores (the lease store only `with_leases`).
// MySQL: `retry_budget_ms` applies unless the URL sets its own.
// REQUIRES: connections >= 1.
Result<OpenedStores> OpenStores(std::string_view spec, int connections, bool with_leases,
                                int retry_budget_ms);

}  // namespace seqd
