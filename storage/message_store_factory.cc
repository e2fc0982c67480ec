#include "storage/message_store_factory.h"

#include "storage/memory/memory_message_store.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/sqlite/sqlite_message_store.h"
#include "storage/store_spec.h"

namespace seqd {

Result<std::unique_ptr<MessageStore>> OpenMessageStore(std::string_view spec) {
  return OpenFromSpec<MessageStore, MemoryMessageStore, SqliteMessageStore, MysqlMessageStore>(
      spec);
}

}  // namespace seqd
