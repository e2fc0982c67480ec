#include "storage/store_factory.h"

#include <algorithm>

#include "storage/grouped_message_store.h"
#include "storage/grouped_segment_store.h"
#include "storage/grouped_shard_lease_store.h"
#include "storage/message_store_factory.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_placement_store.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_shard_data.h"
#include "storage/mysql/mysql_shard_lease_store.h"
#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_worker_lease_store.h"
#include "storage/sqlite/sqlite_store.h"
#include "storage/store_shedding.h"
#include "storage/store_spec.h"
#include "storage/worker_lease_store_factory.h"

namespace seqd {

namespace {
constexpr int kClusterIdleTxnTimeoutS = 1;
}  // namespace

Result<std::unique_ptr<SegmentStore>> OpenStore(std::string_view spec) {
  auto parsed = ParseStoreSpec(spec, /*allow_memory=*/false);
  if (!parsed.ok()) return parsed.error();
  if (parsed->kind == StoreKind::kSqlite) {
    return WithSchema<SegmentStore>(SqliteStore::Open(parsed->sqlite_path));
  }
  // kMysql (no kMemory without allow_memory).
  return std::unique_ptr<SegmentStore>(std::make_unique<MysqlStore>(std::move(parsed->mysql)));
}

Status OpenedStores::EnsureSchemas() {
  Status s = segments->EnsureSchema();
  if (s) s = messages->EnsureSchema();
  if (s && leases) s = leases->EnsureSchema();
  return s;
}

namespace {

// OpenStores on a mysql:// spec (`parsed`). `placement`: set for the stores
// of store group `group`, whose unfenced reads and writes it guards
// (MysqlShardGuard, with a pool of snapshot reads of its own).
OpenedStores OpenMysqlStores(const StoreSpec& parsed, const StoreNeeds& needs,
                             std::shared_ptr<const StorePlacement> placement, size_t group) {
  OpenedStores out;
  MysqlOptions options = parsed.mysql;
  options.pool_size = needs.connections;
  if (!needs.password.empty()) options.password = needs.password;
  if (needs.cluster && options.idle_txn_timeout_s == 0) {
    // A frozen owner must not hold its rows' locks (a key's leaf_alloc
    // row, a lease row) past the takeover: docs/cluster.md.
    options.idle_txn_timeout_s = kClusterIdleTxnTimeoutS;
  }
  const bool url_budget = options.retry_budget_ms >= 0;
  if (!url_budget) options.retry_budget_ms = needs.retry_budget_ms;
  out.pool = std::make_shared<MysqlPool>(options);
  std::shared_ptr<MysqlPool> read_pool;
  if (placement) {
    MysqlOptions reads = options;
    reads.snapshot_reads = true;
    read_pool = std::make_shared<MysqlPool>(reads);
  }
  const MysqlShardGuard guard(std::move(placement), group, std::move(read_pool));
  out.segments =
      std::make_unique<SheddingSegmentStore>(std::make_unique<MysqlStore>(out.pool, guard));
  out.messages = std::make_unique<MysqlMessageStore>(out.pool, guard);
  options.pool_size = 1;
  if (needs.worker_leases) {
    out.lease_pool = std::make_shared<MysqlPool>(options);
    out.leases = std::make_unique<MysqlWorkerLeaseStore>(out.lease_pool);
  }
  if (needs.cluster) {
    options.retry_budget_ms = url_budget
                                  ? std::min(options.retry_budget_ms, needs.cluster_retry_budget_ms)
                                  : needs.cluster_retry_budget_ms;
    // The lease round never waits long for a row a frozen owner locked.
    if (options.lock_wait_timeout_s == 0) options.lock_wait_timeout_s = 1;
    out.cluster_pool = std::make_shared<MysqlPool>(options);
    out.shard_leases = std::make_unique<MysqlShardLeaseStore>(out.cluster_pool);
  }
  return out;
}

// Every group's stores (each as OpenStores on its URL, their unfenced
// writes guarded; worker leases in the home group only), composed behind
// the grouped stores.
Result<OpenedStores> OpenStoreGroups(const StoreNeeds& needs) {
  if (!needs.cluster) {
    return MakeError(ErrorCode::kInvalidArgument, "several store groups need cluster mode");
  }
  if (needs.shard_of == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "store groups: no shard hash given");
  }
  std::vector<std::string> names;
  for (const auto& group : needs.groups) names.push_back(group.first);
  OpenedStores out;
  out.placement = std::make_shared<StorePlacement>(names, needs.shard_of);
  std::vector<std::unique_ptr<SegmentStore>> segments;
  std::vector<std::unique_ptr<MessageStore>> messages;
  std::vector<GroupedShardLeaseStore::Group> leases;
  for (size_t i = 0; i < needs.groups.size(); ++i) {
    const auto& [name, url] = needs.groups[i];
    StoreNeeds one = needs;
    one.groups.clear();
    one.worker_leases = needs.worker_leases && i == 0;
    auto parsed = ParseStoreSpec(url, /*allow_memory=*/false);
    if (parsed && parsed->kind != StoreKind::kMysql) {
      parsed = MakeError(ErrorCode::kInvalidArgument, "cluster mode needs a mysql:// store");
    }
    if (!parsed) {
      return MakeError(parsed.error().code,
                       "store group '" + name + "': " + parsed.error().message);
    }
    OpenedStores opened = OpenMysqlStores(*parsed, one, out.placement, i);
    out.group_data.push_back(std::make_unique<MysqlShardData>(opened.pool, needs.shard_of));
    out.group_segments.push_back(opened.segments.get());
    out.group_messages.push_back(opened.messages.get());
    segments.push_back(std::move(opened.segments));
    messages.push_back(std::move(opened.messages));
    leases.push_back(
        GroupedShardLeaseStore::Group{std::move(opened.shard_leases),
                                      std::make_unique<MysqlPlacementStore>(opened.cluster_pool)});
    if (i == 0) {
      out.pool = opened.pool;
      out.lease_pool = opened.lease_pool;
      out.cluster_pool = opened.cluster_pool;
      out.leases = std::move(opened.leases);
    }
  }
  out.segments = std::make_unique<GroupedSegmentStore>(std::move(segments), *out.placement);
  out.messages = std::make_unique<GroupedMessageStore>(std::move(messages), *out.placement);
  auto grouped = std::make_unique<GroupedShardLeaseStore>(std::move(leases), *out.placement);
  out.grouped_leases = grouped.get();
  out.shard_leases = std::move(grouped);
  return out;
}

}  // namespace

Result<OpenedStores> OpenStores(std::string_view spec, const StoreNeeds& needs) {
  if (needs.groups.size() > 1) return OpenStoreGroups(needs);
  auto parsed = ParseStoreSpec(spec, /*allow_memory=*/false);
  if (!parsed.ok()) return parsed.error();
  if (parsed->kind == StoreKind::kMysql) return OpenMysqlStores(*parsed, needs, nullptr, 0);
  OpenedStores out;
  const bool with_leases = needs.worker_leases;
  if (needs.cluster) {
    return MakeError(ErrorCode::kInvalidArgument, "cluster mode needs a mysql:// store");
  }
  auto segments = OpenStore(spec);
  if (!segments) return segments.error();
  out.segments = std::make_unique<SheddingSegmentStore>(std::move(segments).value());
  auto messages = OpenMessageStore(spec);
  if (!messages) return messages.error();
  out.messages = std::move(messages).value();
  if (with_leases) {
    auto leases = OpenWorkerLeaseStore(spec);
    if (!leases) return leases.error();
    out.leases = std::move(leases).value();
  }
  return out;
}

}  // namespace seqd
