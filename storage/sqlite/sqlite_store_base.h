// What every SQLite store is built on: one connection to its file
// (SqliteDb), the mutex that serializes every use of it, and its schema.
// `Interface` is the store's (SegmentStore, MessageStore,
// WorkerLeaseStore); `Store` the store itself, which Open() builds.
//
// The file: its parent directory is created if missing; it is opened with
// WAL, synchronous=FULL and a busy_timeout of 5000 ms, on first use, or
// by Open() at once. Every call returns kStoreUnavailable while it cannot
// be opened; nothing throws.
//
// Thread safety: the store holds mu_ across each whole operation,
// transactions included.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>

#include "common/mutex.h"
#include "storage/sqlite/sqlite_db.h"

namespace seqd {

template <typename Interface, typename Store>
class SqliteStoreBase : public Interface {
 public:
  SqliteStoreBase(const SqliteStoreBase&) = delete;
  SqliteStoreBase& operator=(const SqliteStoreBase&) = delete;

  // A store on `path`, its file opened now; its tables are not created
  // (EnsureSchema). kStoreUnavailable if the file cannot be opened.
  static Result<std::unique_ptr<Store>> Open(const std::string& path) {
    auto store = std::make_unique<Store>(path);
    SqliteStoreBase& base = *store;
    MutexLock lock(base.mu_);
    if (Status st = base.db_.Open(); !st.ok()) return st.error();
    return store;
  }

  const std::string& path() const { return path_; }

  // Creates the store's tables if missing.
  Status EnsureSchema() override {
    MutexLock lock(mu_);
    return db_.ExecScript(schema_, schema_op_);
  }

 protected:
  // Does not touch the file. `sql`: the store's statements by id;
  // `schema`: the statements that create its tables, named `schema_op`
  // in errors. All three static.
  SqliteStoreBase(std::string path, std::span<const char* const> sql, const char* schema,
                  const char* schema_op)
      : db_(path, sql), path_(std::move(path)), schema_(schema), schema_op_(schema_op) {}

  Mutex mu_;
  SqliteDb db_ GUARDED_BY(mu_);

 private:
  const std::string path_;  // db_.path(), readable without mu_
  const char* const schema_;
  const char* const schema_op_;
};

}  // namespace seqd
