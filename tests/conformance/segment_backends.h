// The SegmentStore backends the conformance checks run on (memory, SQLite,
// MariaDB), each able to open another instance on the same data, reopen
// itself and install a table created by Leaf's own DDL.
//
// Test-only; include after <doctest/doctest.h>. Not thread-safe: a
// backend is driven by one test thread (its NewInstance()s by others).
#pragma once

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "storage/memory/memory_store.h"
#include "storage/mysql/mysql_store.h"
#include "storage/segment_store.h"
#include "storage/sqlite/sqlite_store.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/grouped_backends.h"
#include "tests/unit/test_stores.h"

namespace seqd::conformance {

// Wall-clock now in unix milliseconds.
inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Non-owning SegmentStore that forwards to another (a second "instance" of
// the memory store, which cannot be shared otherwise, or a store group's
// store), its batch reservations, token pruning and max IDs included.
class ForwardingStore final : public ForwardingSegmentStore {
 public:
  explicit ForwardingStore(SegmentStore& inner) : ForwardingSegmentStore(inner) {}
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override {
    return inner().ReserveMany(requests);
  }
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override {
    return inner().PruneBlockTokens(before_unix_ms);
  }
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override {
    return inner().GetMaxIds(keys);
  }
};

class Backend : public StoreBackend<SegmentStore> {
 public:
  // Drops the main instance and opens it again (same data).
  virtual void Reopen() = 0;
  // Makes store() see a leaf_alloc table created by Leaf's own DDL holding
  // the row from Leaf's README: ('leaf-segment-test', 1, 2000, '...').
  virtual void InstallLeafTable() = 0;
  virtual bool durable() const = 0;
  virtual bool tracks_update_time() const = 0;
};

inline constexpr const char* kLeafTag = "leaf-segment-test";
inline constexpr const char* kLeafDescription = "Test leaf Segment Mode Get Id";
inline constexpr const char* kLeafInsert =
    "insert into leaf_alloc(biz_tag, max_id, step, description) "
    "values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')";

class MemoryBackend final : public Backend {
 public:
  MemoryBackend() : store_(std::make_unique<MemoryStore>()) {}
  SegmentStore& store() override { return *store_; }
  std::unique_ptr<SegmentStore> NewInstance() override {
    return std::make_unique<ForwardingStore>(*store_);
  }
  void Reopen() override {}
  void InstallLeafTable() override {
    store_ = std::make_unique<MemoryStore>();
    REQUIRE_OK(store_->CreateKey(kLeafTag, 2000, kLeafDescription));
  }
  bool durable() const override { return false; }
  bool tracks_update_time() const override { return false; }

 private:
  std::unique_ptr<MemoryStore> store_;
};

// Two memory stores as two store groups (tests/conformance/grouped_backends.h).
class GroupedBackend final : public Backend {
 public:
  GroupedBackend() : placement_(TwoGroupPlacement()) { Reset(); }
  SegmentStore& store() override { return *store_; }
  std::unique_ptr<SegmentStore> NewInstance() override {
    std::vector<std::unique_ptr<SegmentStore>> groups;
    for (auto& g : groups_) groups.push_back(std::make_unique<ForwardingStore>(*g));
    return std::make_unique<GroupedSegmentStore>(std::move(groups), *placement_);
  }
  void Reopen() override {}
  void InstallLeafTable() override {
    Reset();
    REQUIRE_OK(store_->CreateKey(kLeafTag, 2000, kLeafDescription));
  }
  bool durable() const override { return false; }
  bool tracks_update_time() const override { return false; }

 private:
  void Reset() {
    store_.reset();
    groups_.clear();
    groups_.push_back(std::make_unique<MemoryStore>());
    groups_.push_back(std::make_unique<MemoryStore>());
    store_ = NewInstance();
  }

  std::shared_ptr<StorePlacement> placement_;
  std::vector<std::unique_ptr<MemoryStore>> groups_;
  std::unique_ptr<SegmentStore> store_;
};

inline std::unique_ptr<SqliteStore> OpenSqlite(const std::string& path) {
  auto s = SqliteStore::Open(path);
  REQUIRE_MESSAGE(s.ok(), "SqliteStore::Open(", path, ") -> ", Describe(s));
  return std::move(s).value();
}

class SqliteBackend final : public SqliteFileBackend<Backend, SegmentStore, SqliteStore> {
 public:
  SqliteBackend() : SqliteFileBackend("seqd-conformance-", "leaf.db", OpenSqlite) {
    REQUIRE_OK(store_->EnsureSchema());
  }
  void Reopen() override {
    store_.reset();
    store_ = OpenSqlite(path_);
  }
  void InstallLeafTable() override {
    store_.reset();
    path_ = (dir_.path() / "leaf-created.db").string();
    // Leaf's MySQL DDL minus what SQLite cannot parse (ON UPDATE, ENGINE).
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path_.c_str(), &db) == SQLITE_OK);
    const char* ddl =
        "CREATE TABLE `leaf_alloc` ("
        "  `biz_tag` varchar(128) NOT NULL DEFAULT '',"
        "  `max_id` bigint(20) NOT NULL DEFAULT '1',"
        "  `step` int(11) NOT NULL,"
        "  `description` varchar(256)  DEFAULT NULL,"
        "  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
        "  PRIMARY KEY (`biz_tag`))";
    char* err = nullptr;
    int rc = sqlite3_exec(db, ddl, nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    CHECK_MESSAGE(rc == SQLITE_OK, msg);
    rc = sqlite3_exec(db, kLeafInsert, nullptr, nullptr, &err);
    msg = err ? err : "";
    sqlite3_free(err);
    CHECK_MESSAGE(rc == SQLITE_OK, msg);
    sqlite3_close(db);
    store_ = OpenSqlite(path_);
    REQUIRE_OK(store_->EnsureSchema());  // must accept the existing table
  }
  bool durable() const override { return true; }
  bool tracks_update_time() const override { return true; }
};

class MysqlBackend final : public MysqlServerBackend<Backend, SegmentStore, MysqlStore> {
 public:
  // Another instance with a pool of one connection.
  std::unique_ptr<SegmentStore> NewInstance() override {
    MysqlOptions o = opts_;
    o.pool_size = 1;
    return std::make_unique<MysqlStore>(o);
  }
  void Reopen() override {
    store_.reset();
    store_ = std::make_unique<MysqlStore>(opts_);
  }
  void InstallLeafTable() override {
    store_.reset();
    auto raw = RawMysql(opts_);
    // Prefer a database of our own, so the shared table is left alone; the
    // test user may lack CREATE DATABASE, then reuse the main database.
    MysqlOptions o = opts_;
    const std::string leaf_db = opts_.database + "_leaf";
    bool own_db = true;
    try {
      std::unique_ptr<sql::Statement> s(raw->createStatement());
      s->execute("CREATE DATABASE IF NOT EXISTS `" + leaf_db + "`");
    } catch (const sql::SQLException& e) {
      MESSAGE("cannot create database ", leaf_db, " (", std::string(e.what()),
              "); using the main database for the Leaf table");
      own_db = false;
    }
    if (own_db) {
      raw->setSchema(leaf_db);
      o.database = leaf_db;
      RawExec(*raw, "DROP TABLE IF EXISTS leaf_alloc");
    } else {
      RawExec(*raw, "DELETE FROM leaf_alloc WHERE biz_tag = 'leaf-segment-test'");
    }
    // Leaf's DDL, verbatim from its README.
    RawExec(*raw,
            "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n"
            "  `biz_tag` varchar(128)  NOT NULL DEFAULT '',\n"
            "  `max_id` bigint(20) NOT NULL DEFAULT '1',\n"
            "  `step` int(11) NOT NULL,\n"
            "  `description` varchar(256)  DEFAULT NULL,\n"
            "  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE "
            "CURRENT_TIMESTAMP,\n"
            "  PRIMARY KEY (`biz_tag`)\n"
            ") ENGINE=InnoDB;");
    RawExec(*raw, kLeafInsert);
    store_ = std::make_unique<MysqlStore>(o);
    REQUIRE_OK(store_->EnsureSchema());
  }
  bool durable() const override { return true; }
  bool tracks_update_time() const override { return true; }
  MysqlStore& mysql() { return *store_; }
};

}  // namespace seqd::conformance
