#include "storage/message_store_factory.h"

#include "storage/memory/memory_message_store.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/sqlite/sqlite_message_store.h"
#include "storage/store_spec.h"

namespace seqd {

Result<std::unique_ptr<MessageStore>> OpenMessageStore(std::string_view spec) {
  auto parsed = ParseStoreSpec(spec, /*allow_memory=*/true);
  if (!parsed.ok()) return parsed.error();
  switch (parsed->kind) {
    case StoreKind::kMemory:
      return std::unique_ptr<MessageStore>(std::make_unique<MemoryMessageStore>());
    case StoreKind::kSqlite:
      return WithSchema<MessageStore>(SqliteMessageStore::Open(parsed->sqlite_path));
    case StoreKind::kMysql:
      break;
  }
  return std::unique_ptr<MessageStore>(
      std::make_unique<MysqlMessageStore>(std::move(parsed->mysql)));
}

}  // namespace seqd
