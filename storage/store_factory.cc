#include "storage/store_factory.h"

#include "storage/mysql_store.h"
#include "storage/sqlite_store.h"
#include "storage/store_spec.h"

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

}  // namespace seqd
