// Parsing of a store spec (the --store syntax), and the opening of the store
// it names, shared by the factories (OpenStore, OpenMessageStore,
// OpenWorkerLeaseStore).
//
// Thread safety: plain functions, callable from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "storage/mysql/mysql_pool.h"

namespace seqd {

enum class StoreKind { kMemory, kSqlite, kMysql };

struct StoreSpec {
  StoreKind kind = StoreKind::kMemory;
  std::string sqlite_path;  // kSqlite: never empty
  MysqlOptions mysql;       // kMysql
};

// `spec` is "memory:" (only with `allow_memory`), "sqlite:PATH" or
// "mysql://user:pass@host:port/db", several hosts "host1:port,host2:port"
// allowed (MysqlStore::ParseUrl). Anything else is
// kInvalidArgument, naming the accepted forms; a mysql spec is never echoed
// (it carries the password).
Result<StoreSpec> ParseStoreSpec(std::string_view spec, bool allow_memory);

// Runs EnsureSchema() on a just-opened store and returns it as a `Base`, or
// the first error.
template <typename Base, typename Store>
Result<std::unique_ptr<Base>> WithSchema(Result<std::unique_ptr<Store>> store) {
  if (!store.ok()) return store.error();
  Status st = (*store)->EnsureSchema();
  if (!st.ok()) return st.error();
  return std::unique_ptr<Base>(std::move(store).value());
}

// The store of interface `Base` that `spec` names (a memory spec allowed):
// a `Memory`; a `Sqlite` on the file, opened and its schema made; or a
// `Mysql` on the URL's options, not connected yet.
template <typename Base, typename Memory, typename Sqlite, typename Mysql>
Result<std::unique_ptr<Base>> OpenFromSpec(std::string_view spec) {
  auto parsed = ParseStoreSpec(spec, /*allow_memory=*/true);
  if (!parsed.ok()) return parsed.error();
  switch (parsed->kind) {
    case StoreKind::kMemory:
      return std::unique_ptr<Base>(std::make_unique<Memory>());
    case StoreKind::kSqlite:
      return WithSchema<Base>(Sqlite::Open(parsed->sqlite_path));
    case StoreKind::kMysql:
      break;
  }
  return std::unique_ptr<Base>(std::make_unique<Mysql>(std::move(parsed->mysql)));
}

}  // namespace seqd
