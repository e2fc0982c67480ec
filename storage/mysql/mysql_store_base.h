// What every MySQL store is built on: the MysqlPool its calls run on, its own
// or one shared with the process's other MySQL stores. `Interface` is the
// store's (SegmentStore, MessageStore, WorkerLeaseStore, ShardLeaseStore).
//
// Thread safety: the pool is safe from any number of threads.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "storage/mysql/mysql_pool.h"

namespace seqd {

template <typename Interface>
class MysqlStoreBase : public Interface {
 public:
  // Does not connect; the first call that needs the database does. Use
  // MysqlStore::ParseUrl for the options.
  explicit MysqlStoreBase(MysqlOptions options)
      : pool_(std::make_shared<MysqlPool>(std::move(options))) {}
  // On a pool shared with other stores (never null).
  explicit MysqlStoreBase(std::shared_ptr<MysqlPool> pool) : pool_(std::move(pool)) {}

  MysqlStoreBase(const MysqlStoreBase&) = delete;
  MysqlStoreBase& operator=(const MysqlStoreBase&) = delete;

  // "user@host:port/database", safe to log.
  std::string Describe() const { return DescribeMysql(pool_->options()); }

 protected:
  const std::shared_ptr<MysqlPool> pool_;
};

}  // namespace seqd
