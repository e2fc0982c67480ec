#include "storage/message_store_factory.h"

#include <string>

#include "storage/memory_message_store.h"
#include "storage/mysql_message_store.h"
#include "storage/mysql_store.h"
#include "storage/sqlite_message_store.h"

namespace seqd {
namespace {

constexpr std::string_view kMemorySpec = "memory:";
constexpr std::string_view kSqlitePrefix = "sqlite:";
constexpr std::string_view kMysqlPrefix = "mysql://";

Error BadSpec(std::string_view spec, std::string_view detail = {}) {
  std::string msg =
      "--store: expected memory:, sqlite:PATH or mysql://user:pass@host:port/db, got '" +
      std::string(spec) + "'";
  if (!detail.empty()) {
    msg += ": ";
    msg += detail;
  }
  return MakeError(ErrorCode::kInvalidArgument, std::move(msg));
}

}  // namespace

Result<std::unique_ptr<MessageStore>> OpenMessageStore(std::string_view spec) {
  if (spec == kMemorySpec) {
    return std::unique_ptr<MessageStore>(std::make_unique<MemoryMessageStore>());
  }
  if (spec.substr(0, kSqlitePrefix.size()) == kSqlitePrefix) {
    const std::string path(spec.substr(kSqlitePrefix.size()));
    if (path.empty()) return BadSpec(spec, "empty sqlite path");
    auto store = SqliteMessageStore::Open(path);
    if (!store.ok()) return store.error();
    Status st = (*store)->EnsureSchema();
    if (!st.ok()) return st.error();
    return std::unique_ptr<MessageStore>(std::move(store).value());
  }
  if (spec.substr(0, kMysqlPrefix.size()) == kMysqlPrefix) {
    // Never echo a mysql spec: it carries the password.
    auto opts = MysqlStore::ParseUrl(spec);
    if (!opts.ok()) {
      return MakeError(ErrorCode::kInvalidArgument, "--store: " + opts.error().message);
    }
    return std::unique_ptr<MessageStore>(
        std::make_unique<MysqlMessageStore>(std::move(opts).value()));
  }
  return BadSpec(spec);
}

}  // namespace seqd
