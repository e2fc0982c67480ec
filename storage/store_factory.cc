#include "storage/store_factory.h"

#include "storage/message_store_factory.h"
#include "storage/mysql_message_store.h"
#include "storage/mysql_pool.h"
#include "storage/mysql_store.h"
#include "storage/mysql_worker_lease_store.h"
#include "storage/sqlite_store.h"
#include "storage/store_spec.h"
#include "storage/worker_lease_store_factory.h"

namespace seqd {

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

Result<OpenedStores> OpenStores(std::string_view spec, int connections, bool with_leases,
                                int retry_budget_ms) {
  auto parsed = ParseStoreSpec(spec, /*allow_memory=*/false);
  if (!parsed.ok()) return parsed.error();
  OpenedStores out;
  if (parsed->kind == StoreKind::kMysql) {
    MysqlOptions options = parsed->mysql;
    options.pool_size = connections;
    if (options.retry_budget_ms < 0) options.retry_budget_ms = retry_budget_ms;
    out.pool = std::make_shared<MysqlPool>(options);
    out.segments = std::make_unique<MysqlStore>(out.pool);
    out.messages = std::make_unique<MysqlMessageStore>(out.pool);
    if (with_leases) {
      options.pool_size = 1;
      out.lease_pool = std::make_shared<MysqlPool>(options);
      out.leases = std::make_unique<MysqlWorkerLeaseStore>(out.lease_pool);
    }
    return out;
  }
  auto segments = OpenStore(spec);
  if (!segments) return segments.error();
  out.segments = std::move(segments).value();
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
