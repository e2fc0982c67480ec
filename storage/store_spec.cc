#include "storage/store_spec.h"

#include "storage/mysql/mysql_store.h"

namespace seqd {
namespace {

constexpr std::string_view kMemorySpec = "memory:";
constexpr std::string_view kSqlitePrefix = "sqlite:";
constexpr std::string_view kMysqlPrefix = "mysql://";

Error BadSpec(std::string_view spec, bool allow_memory, std::string_view detail = {}) {
  std::string msg = allow_memory ? "--store: expected memory:, sqlite:PATH or "
                                   "mysql://user:pass@host:port/db, got '"
                                 : "--store: expected sqlite:PATH or "
                                   "mysql://user:pass@host:port/db, got '";
  msg += spec;
  msg += "'";
  if (!detail.empty()) {
    msg += ": ";
    msg += detail;
  }
  return MakeError(ErrorCode::kInvalidArgument, std::move(msg));
}

}  // namespace

Result<StoreSpec> ParseStoreSpec(std::string_view spec, bool allow_memory) {
  StoreSpec out;
  if (allow_memory && spec == kMemorySpec) {
    out.kind = StoreKind::kMemory;
    return out;
  }
  if (spec.substr(0, kSqlitePrefix.size()) == kSqlitePrefix) {
    out.kind = StoreKind::kSqlite;
    out.sqlite_path = std::string(spec.substr(kSqlitePrefix.size()));
    if (out.sqlite_path.empty()) return BadSpec(spec, allow_memory, "empty sqlite path");
    return out;
  }
  if (spec.substr(0, kMysqlPrefix.size()) == kMysqlPrefix) {
    // Never echo a mysql spec: it carries the password.
    auto opts = MysqlStore::ParseUrl(spec);
    if (!opts.ok()) {
      return MakeError(ErrorCode::kInvalidArgument, "--store: " + opts.error().message);
    }
    out.kind = StoreKind::kMysql;
    out.mysql = std::move(opts).value();
    return out;
  }
  return BadSpec(spec, allow_memory);
}

}  // namespace seqd
