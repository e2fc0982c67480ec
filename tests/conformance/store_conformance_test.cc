// Conformance suite for SegmentStore implementations.
//
// The same checks run against every backend, each in its own doctest suite:
//   memory, sqlite        -> ctest store_conformance
//   mariadb               -> ctest store_conformance_mariadb; needs
//                            SEQD_TEST_MYSQL_URL (see scripts/mariadb.sh) and
//                            fails, not skips, without it
//   misc                  -> URL/spec parsing and unreachable-server checks
//                            (no database needed) -> store_conformance
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/memory_store.h"
#include "storage/mysql_store.h"
#include "storage/segment_store.h"
#include "storage/sqlite_store.h"
#include "storage/store_factory.h"
#include "tests/conformance/conformance_support.h"

namespace seqd {
namespace {

using namespace conformance;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- helpers

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Non-owning SegmentStore that forwards to another (a second "instance" of
// the memory store, which cannot be shared otherwise).
class ForwardingStore final : public SegmentStore {
 public:
  explicit ForwardingStore(SegmentStore& inner) : inner_(inner) {}
  Status EnsureSchema() override { return inner_.EnsureSchema(); }
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    return inner_.Reserve(key, step);
  }
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override {
    return inner_.ReserveMany(requests);
  }
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override {
    return inner_.CreateKeys(keys, description);
  }
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override {
    return inner_.CreateKey(key, step, description);
  }
  Result<KeyRow> GetKey(std::string_view key) override { return inner_.GetKey(key); }
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override {
    return inner_.ListKeys(after, limit);
  }
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override {
    return inner_.SetStep(key, step);
  }
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override {
    return inner_.GetMinSeqs(keys);
  }
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override {
    return inner_.SetMinSeqs(values, fences, refused_shard);
  }
  Status Ping() override { return inner_.Ping(); }

 private:
  SegmentStore& inner_;
};

// ---------------------------------------------------------------- backends

class Backend {
 public:
  virtual ~Backend() = default;
  // The main instance.
  virtual SegmentStore& store() = 0;
  // Another instance (own connection) on the same data.
  virtual std::unique_ptr<SegmentStore> NewInstance() = 0;
  // Drops the main instance and opens it again (same data).
  virtual void Reopen() = 0;
  // Makes store() see a leaf_alloc table created by Leaf's own DDL holding
  // the row from Leaf's README: ('leaf-segment-test', 1, 2000, '...').
  virtual void InstallLeafTable() = 0;
  virtual bool durable() const = 0;
  virtual bool tracks_update_time() const = 0;
};

constexpr const char* kLeafTag = "leaf-segment-test";
constexpr const char* kLeafDescription = "Test leaf Segment Mode Get Id";
constexpr const char* kLeafInsert =
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

std::unique_ptr<SqliteStore> OpenSqlite(const std::string& path) {
  auto s = SqliteStore::Open(path);
  REQUIRE_MESSAGE(s.ok(), "SqliteStore::Open(", path, ") -> ", Describe(s));
  return std::move(s).value();
}

class SqliteBackend final : public Backend {
 public:
  SqliteBackend() : dir_("seqd-conformance-"), path_((dir_.path() / "sub" / "leaf.db").string()) {
    store_ = OpenSqlite(path_);  // also creates dir_/sub
    REQUIRE_OK(store_->EnsureSchema());
  }
  SegmentStore& store() override { return *store_; }
  std::unique_ptr<SegmentStore> NewInstance() override { return OpenSqlite(path_); }
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
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;  // declared first: removed after the store closed
  std::string path_;
  std::unique_ptr<SqliteStore> store_;
};

class MysqlBackend final : public Backend {
 public:
  MysqlBackend() : opts_(TestMysqlOptions()) {
    store_ = std::make_unique<MysqlStore>(opts_);
    REQUIRE_OK(store_->EnsureSchema());
  }
  SegmentStore& store() override { return *store_; }
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
  const MysqlOptions& options() const { return opts_; }
  MysqlStore& mysql() { return *store_; }

 private:
  MysqlOptions opts_;
  std::unique_ptr<MysqlStore> store_;
};

// ---------------------------------------------------------------- checks

void CheckCrud(Backend& b) {
  SegmentStore& s = b.store();
  REQUIRE_OK(s.Ping());
  REQUIRE_OK(s.EnsureSchema());  // idempotent
  const std::string k = UniqueName("crud");

  auto created = s.CreateKey(k, 100, "first key");
  REQUIRE_OK(created);
  CHECK(created->key == k);
  CHECK(created->max_id == 1);
  CHECK(created->step == 100);
  CHECK(created->description == "first key");

  auto got = s.GetKey(k);
  REQUIRE_OK(got);
  CHECK(got->key == k);
  CHECK(got->max_id == 1);
  CHECK(got->step == 100);
  CHECK(got->description == "first key");
  if (b.tracks_update_time()) {
    CHECK_MESSAGE(std::llabs(got->update_time_ms - NowMs()) < 10 * 60 * 1000,
                  "update_time_ms=", got->update_time_ms, " now=", NowMs());
  }

  CHECK_ERR(s.CreateKey(k, 5, "again"), ErrorCode::kKeyExists);
  auto still = s.GetKey(k);
  REQUIRE_OK(still);
  CHECK(still->step == 100);
  CHECK(still->description == "first key");

  auto set = s.SetStep(k, 500);
  REQUIRE_OK(set);
  CHECK(set->step == 500);
  CHECK(set->max_id == 1);
  CHECK(set->key == k);
  REQUIRE_OK(s.SetStep(k, 500));  // same value: still a known key
  got = s.GetKey(k);
  REQUIRE_OK(got);
  CHECK(got->step == 500);

  const std::string missing = UniqueName("missing");
  CHECK_ERR(s.GetKey(missing), ErrorCode::kUnknownKey);
  CHECK_ERR(s.SetStep(missing, 10), ErrorCode::kUnknownKey);
  CHECK_ERR(s.Reserve(missing, std::nullopt), ErrorCode::kUnknownKey);
  CHECK_ERR(s.Reserve(missing, 1000), ErrorCode::kUnknownKey);
  CHECK_ERR(s.GetKey(missing), ErrorCode::kUnknownKey);  // Reserve created nothing

  auto empty_desc = s.CreateKey(UniqueName("nodesc"), 7, "");
  REQUIRE_OK(empty_desc);
  CHECK(empty_desc->description.empty());
}

void CheckListPaging(Backend& b) {
  SegmentStore& s = b.store();
  const std::string prefix = UniqueName("list") + "/";
  const std::vector<std::string> names = {prefix + "a", prefix + "b", prefix + "c", prefix + "d",
                                          prefix + "e"};
  // Created out of order: listing must sort.
  for (int i : {3, 0, 4, 1, 2}) REQUIRE_OK(s.CreateKey(names[i], 10 + i, "k" + std::to_string(i)));

  auto is_ours = [&](const KeyRow& r) { return r.key.rfind(prefix, 0) == 0; };
  std::vector<std::vector<std::string>> pages;
  std::string after = prefix;
  for (int guard = 0; guard < 10; ++guard) {
    auto page = s.ListKeys(after, 2);
    REQUIRE_OK(page);
    CHECK(page->size() <= 2);
    std::vector<std::string> mine;
    for (const KeyRow& r : *page) {
      if (is_ours(r)) mine.push_back(r.key);
    }
    if (mine.empty()) break;
    pages.push_back(mine);
    after = page->back().key;
  }
  REQUIRE(pages.size() == 3);
  CHECK(pages[0] == std::vector<std::string>{names[0], names[1]});
  CHECK(pages[1] == std::vector<std::string>{names[2], names[3]});
  CHECK(pages[2] == std::vector<std::string>{names[4]});

  auto all = s.ListKeys(prefix, 100);
  REQUIRE_OK(all);
  std::vector<KeyRow> rows;
  for (const KeyRow& r : *all) {
    if (is_ours(r)) rows.push_back(r);
  }
  REQUIRE(rows.size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(rows[i].key == names[i]);
    CHECK(rows[i].step == 10 + i);
    CHECK(rows[i].max_id == 1);
    CHECK(rows[i].description == "k" + std::to_string(i));
  }

  auto none = s.ListKeys(prefix, 0);
  REQUIRE_OK(none);
  CHECK(none->empty());
  auto after_last = s.ListKeys(names[4], 10);
  REQUIRE_OK(after_last);
  for (const KeyRow& r : *after_last) CHECK_FALSE(is_ours(r));
}

void CheckSegment(const Result<ReservedSegment>& r, int64_t first, int64_t last, int64_t step) {
  REQUIRE_MESSAGE(r.ok(), Describe(r));
  CHECK(r->first == first);
  CHECK(r->last == last);
  CHECK(r->table_step == step);
}

void CheckReserveSequence(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k = UniqueName("reserve");
  REQUIRE_OK(s.CreateKey(k, 100, ""));
  CheckSegment(s.Reserve(k, std::nullopt), 1, 100, 100);
  CheckSegment(s.Reserve(k, std::nullopt), 101, 200, 100);
  CheckSegment(s.Reserve(k, 1000), 201, 1200, 100);
  CheckSegment(s.Reserve(k, std::nullopt), 1201, 1300, 100);
  auto row = s.GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1301);
  CHECK(row->step == 100);

  REQUIRE_OK(s.SetStep(k, 50));
  CheckSegment(s.Reserve(k, std::nullopt), 1301, 1350, 50);
  CheckSegment(s.Reserve(k, 1), 1351, 1351, 50);

  // Another key is independent.
  const std::string k2 = UniqueName("reserve-other");
  REQUIRE_OK(s.CreateKey(k2, 3, ""));
  CheckSegment(s.Reserve(k2, std::nullopt), 1, 3, 3);
  CheckSegment(s.Reserve(k, std::nullopt), 1352, 1401, 50);
}

void CheckReserveMany(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k1 = UniqueName("many-a");
  const std::string k2 = UniqueName("many-b");
  REQUIRE_OK(s.CreateKey(k1, 100, ""));
  REQUIRE_OK(s.CreateKey(k2, 3, ""));
  // Several ranges of one key in one batch come out in request order.
  auto got = s.ReserveMany({{k1, std::nullopt, {}},
                            {UniqueName("many-missing"), std::nullopt, {}},
                            {k2, 5, {}},
                            {k1, std::nullopt, {}},
                            {k1, 1000, {}}});
  REQUIRE(got.size() == 5);
  CheckSegment(got[0], 1, 100, 100);
  CHECK_ERR(got[1], ErrorCode::kUnknownKey);
  CheckSegment(got[2], 1, 5, 3);
  CheckSegment(got[3], 101, 200, 100);
  CheckSegment(got[4], 201, 1200, 100);
  auto row = s.GetKey(k1);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1201);
  // A batch of one, and the single-key call, continue the same sequence.
  auto one = s.ReserveMany({{k2, std::nullopt, {}}});
  REQUIRE(one.size() == 1);
  CheckSegment(one[0], 6, 8, 3);
  CheckSegment(s.Reserve(k2, std::nullopt), 9, 11, 3);

  // More keys than one statement takes (1024): created in one call, some
  // of them already there (left as they are), then reserved twice.
  constexpr size_t kKeys = 1100;
  const std::string prefix = UniqueName("many-bulk") + "-";
  std::vector<NewKey> keys;
  for (size_t i = 0; i < kKeys; ++i) {
    keys.push_back(NewKey{prefix + std::to_string(i), static_cast<int64_t>(1 + i % 7)});
  }
  REQUIRE_OK(s.CreateKey(keys[5].key, 50, "was there"));
  CheckSegment(s.Reserve(keys[5].key, std::nullopt), 1, 50, 50);
  REQUIRE_OK(s.CreateKeys(keys, "bulk"));
  std::vector<ReserveRequest> requests;
  for (const NewKey& k : keys) requests.push_back(ReserveRequest{k.key, std::nullopt, {}});
  for (int64_t round = 0; round < 2; ++round) {
    auto ranges = s.ReserveMany(requests);
    REQUIRE(ranges.size() == kKeys);
    for (size_t i = 0; i < kKeys; ++i) {
      CAPTURE(i);
      const int64_t step = i == 5 ? 50 : keys[i].step;
      const int64_t base = i == 5 ? 51 : 1;
      CheckSegment(ranges[i], base + round * step, base + (round + 1) * step - 1, step);
    }
  }
  auto kept = s.GetKey(keys[5].key);
  REQUIRE_OK(kept);
  CHECK(kept->description == "was there");
  auto last = s.GetKey(keys[kKeys - 1].key);
  REQUIRE_OK(last);
  CHECK(last->description == "bulk");
  CHECK(last->max_id == 1 + 2 * keys[kKeys - 1].step);
}

// One thread's ReserveMany answers: each range with its key number
// (order[j] for answer j) into `got`, the first error into `error`.
void Tally(const std::vector<Result<ReservedSegment>>& ranges, const std::vector<int>& order,
           std::vector<std::pair<int, ReservedSegment>>& got, std::string& error) {
  for (size_t j = 0; j < ranges.size(); ++j) {
    if (ranges[j]) {
      got.emplace_back(order[j], *ranges[j]);
    } else if (error.empty()) {
      error = Describe(ranges[j]);
    }
  }
}

// Every thread's ranges by key number; a thread's error fails the check.
std::vector<std::vector<ReservedSegment>> PerKey(
    int keys, const std::vector<std::vector<std::pair<int, ReservedSegment>>>& got,
    const std::vector<std::string>& errors) {
  std::vector<std::vector<ReservedSegment>> per_key(static_cast<size_t>(keys));
  for (size_t t = 0; t < got.size(); ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
    for (const auto& [k, seg] : got[t]) per_key[static_cast<size_t>(k)].push_back(seg);
  }
  return per_key;
}

// Threads reserve overlapping batches of the same keys (each in its own
// order, some keys twice): per key, every range is disjoint from the others
// and together they cover 1..max_id-1.
void CheckConcurrentBatches(Backend& b) {
  constexpr int kThreads = 6;
  constexpr int kBatches = 30;
  constexpr int kKeys = 5;
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back(UniqueName("batches-" + std::to_string(i)));
    REQUIRE_OK(b.store().CreateKey(keys.back(), 10 + i, ""));
  }
  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(b.NewInstance());
  std::vector<std::vector<std::pair<int, ReservedSegment>>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int n = 0; n < kBatches; ++n) {
        std::vector<int> order;
        for (int i = 0; i < kKeys; ++i) order.push_back(i);
        order.push_back(static_cast<int>(rng() % kKeys));  // one key twice
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<ReserveRequest> requests;
        for (int i : order) {
          std::optional<int64_t> step;
          if (rng() % 2) step = 1 + static_cast<int64_t>(rng() % 20);
          requests.push_back(ReserveRequest{keys[i], step, {}});
        }
        Tally(stores[t]->ReserveMany(requests), order, got[t], errors[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<std::vector<ReservedSegment>> per_key = PerKey(kKeys, got, errors);
  for (int k = 0; k < kKeys; ++k) {
    auto& all = per_key[k];
    CHECK(all.size() >= static_cast<size_t>(kThreads * kBatches));
    std::sort(all.begin(), all.end(),
              [](const ReservedSegment& x, const ReservedSegment& y) { return x.first < y.first; });
    int64_t expect = 1;
    for (const ReservedSegment& seg : all) {
      CHECK(seg.first == expect);
      expect = seg.last + 1;
    }
    auto row = b.store().GetKey(keys[k]);
    REQUIRE_OK(row);
    CHECK(row->max_id == expect);
  }
}

// Requests that create their rows (create_step) get the first segment of a
// new row and the next one of a row already there, in one call; a key
// named twice gets two ranges in request order; an overflowing row fails
// alone and is left as it is.
void CheckCreateAndReserve(Backend& b) {
  SegmentStore& s = b.store();
  const std::string prefix = UniqueName("create-reserve") + "-";
  const std::string old_key = prefix + "old";
  REQUIRE_OK(s.CreateKey(old_key, 50, "was there"));
  CheckSegment(s.Reserve(old_key, std::nullopt), 1, 50, 50);
  const std::string twice = prefix + "twice";
  const std::string full = prefix + "full";
  REQUIRE_OK(s.CreateKey(full, 10, ""));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  REQUIRE_OK(s.Reserve(full, kMax - 5));  // max_id now kMax - 4: no room for 10 more
  // More new keys than one statement takes (1024).
  constexpr size_t kNew = 1100;
  std::vector<ReserveRequest> requests;
  for (size_t i = 0; i < kNew; ++i) {
    requests.push_back(ReserveRequest{
        prefix + std::to_string(i), std::nullopt, {}, static_cast<int64_t>(1 + i % 7), "auto"});
  }
  requests.push_back(ReserveRequest{old_key, std::nullopt, {}, 9, "auto"});
  requests.push_back(ReserveRequest{twice, std::nullopt, {}, 4, "auto"});
  requests.push_back(ReserveRequest{full, std::nullopt, {}, 10, "auto"});
  requests.push_back(ReserveRequest{twice, 6, {}, 4, "auto"});
  const std::string stepped = prefix + "stepped";  // new, with a step of its own
  requests.push_back(ReserveRequest{stepped, 6, {}, 4, "auto"});
  auto got = s.ReserveMany(requests);
  REQUIRE(got.size() == kNew + 5);
  for (size_t i = 0; i < kNew; ++i) {
    CAPTURE(i);
    CheckSegment(got[i], 1, 1 + static_cast<int64_t>(i % 7), 1 + static_cast<int64_t>(i % 7));
  }
  CheckSegment(got[kNew], 51, 100, 50);  // the row's own step, not the create_step
  CheckSegment(got[kNew + 1], 1, 4, 4);  // created, then its row's step
  CHECK_ERR(got[kNew + 2], ErrorCode::kInternal);
  CheckSegment(got[kNew + 3], 5, 10, 4);  // the same key again: the next range
  CheckSegment(got[kNew + 4], 1, 6, 4);   // the step asked for; the row keeps create_step
  auto stepped_row = s.GetKey(stepped);
  REQUIRE_OK(stepped_row);
  CHECK(stepped_row->max_id == 7);
  CHECK(stepped_row->step == 4);
  auto old_row = s.GetKey(old_key);
  REQUIRE_OK(old_row);
  CHECK(old_row->description == "was there");
  CHECK(old_row->max_id == 101);
  auto full_row = s.GetKey(full);
  REQUIRE_OK(full_row);
  CHECK(full_row->max_id == kMax - 4);
  auto last = s.GetKey(prefix + std::to_string(kNew - 1));
  REQUIRE_OK(last);
  CHECK(last->description == "auto");
  CHECK(last->max_id == 1 + 1 + static_cast<int64_t>((kNew - 1) % 7));
  // Again: every row exists now and continues its sequence.
  auto again = s.ReserveMany({ReserveRequest{prefix + "3", std::nullopt, {}, 4, "auto"},
                              ReserveRequest{prefix + "new", std::nullopt, {}, 2, "auto"}});
  REQUIRE(again.size() == 2);
  CheckSegment(again[0], 5, 8, 4);
  CheckSegment(again[1], 1, 2, 2);
}

// Threads create and reserve the same new keys at once, each batch in its
// own order: per key, the ranges are disjoint and cover 1..max_id-1.
void CheckConcurrentCreates(Backend& b) {
  constexpr int kThreads = 6;
  constexpr int kBatches = 20;
  constexpr int kKeys = 40;
  const std::string prefix = UniqueName("concurrent-create") + "-";
  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(b.NewInstance());
  std::vector<std::vector<std::pair<int, ReservedSegment>>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int n = 0; n < kBatches; ++n) {
        std::vector<int> order;
        for (int i = 0; i < kKeys; ++i) {
          if (rng() % 2) order.push_back(i);
        }
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<ReserveRequest> requests;
        for (int i : order) {
          requests.push_back(
              ReserveRequest{prefix + std::to_string(i), std::nullopt, {}, 3 + i % 5, "auto"});
        }
        Tally(stores[t]->ReserveMany(requests), order, got[t], errors[t]);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<std::vector<ReservedSegment>> per_key = PerKey(kKeys, got, errors);
  for (int k = 0; k < kKeys; ++k) {
    CAPTURE(k);
    auto& all = per_key[k];
    std::sort(all.begin(), all.end(),
              [](const ReservedSegment& x, const ReservedSegment& y) { return x.first < y.first; });
    int64_t expect = 1;
    for (const ReservedSegment& seg : all) {
      CHECK(seg.first == expect);
      CHECK(seg.last - seg.first + 1 == 3 + k % 5);
      expect = seg.last + 1;
    }
    auto row = b.store().GetKey(prefix + std::to_string(k));
    if (all.empty()) continue;
    REQUIRE_OK(row);
    CHECK(row->max_id == expect);
  }
}

void CheckConcurrentDisjoint(Backend& b) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  constexpr int64_t kRowStep = 10;
  constexpr int64_t kExplicitStep = 7;
  const std::string k = UniqueName("concurrent");
  REQUIRE_OK(b.store().CreateKey(k, kRowStep, "concurrency"));

  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(b.NewInstance());
  std::vector<std::vector<ReservedSegment>> got(kThreads);
  std::vector<std::vector<std::string>> errors(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      // Odd threads ask for an explicit step, even ones use the row's.
      const std::optional<int64_t> step =
          t % 2 ? std::optional<int64_t>(kExplicitStep) : std::nullopt;
      for (int i = 0; i < kPerThread; ++i) {
        auto r = stores[t]->Reserve(k, step);
        if (r.ok()) {
          got[t].push_back(*r);
        } else {
          errors[t].push_back(Describe(r));
        }
      }
    });
  }
  const auto start = Clock::now();
  go = true;
  for (auto& th : threads) th.join();
  MESSAGE((kThreads * kPerThread), " concurrent reserves in ",
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
          " ms");

  std::vector<ReservedSegment> all;
  for (int t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t].size(),
                  " errors, first: ", errors[t].empty() ? "" : errors[t][0]);
    for (const auto& seg : got[t]) {
      CHECK(seg.last - seg.first + 1 == (t % 2 ? kExplicitStep : kRowStep));
      all.push_back(seg);
    }
  }
  REQUIRE(all.size() == static_cast<size_t>(kThreads * kPerThread));
  std::sort(all.begin(), all.end(),
            [](const ReservedSegment& a, const ReservedSegment& z) { return a.first < z.first; });
  CHECK(all.front().first == 1);
  int gaps_or_overlaps = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].first != all[i - 1].last + 1) ++gaps_or_overlaps;
  }
  CHECK_MESSAGE(gaps_or_overlaps == 0, "segments are not disjoint and contiguous");
  const int64_t total = kThreads / 2 * kPerThread * (kRowStep + kExplicitStep);
  CHECK(all.back().last == total);
  auto row = b.store().GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == total + 1);
}

void CheckPersistence(Backend& b) {
  const std::string k = UniqueName("persist");
  REQUIRE_OK(b.store().CreateKey(k, 100, "survives"));
  CheckSegment(b.store().Reserve(k, std::nullopt), 1, 100, 100);
  {
    auto other = b.NewInstance();
    CheckSegment(other->Reserve(k, 50), 101, 150, 100);
  }
  b.Reopen();
  auto row = b.store().GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == 151);
  CHECK(row->step == 100);
  CHECK(row->description == "survives");
  CheckSegment(b.store().Reserve(k, std::nullopt), 151, 250, 100);
  if (!b.durable()) MESSAGE("memory store: reopen is a no-op (nothing is durable)");
}

// Issue 30: per-key min seqs in their own table (seqd_min_seq), beside
// leaf_alloc and never in it.
void CheckMinSeqs(Backend& b) {
  SegmentStore& s = b.store();
  const std::string a = UniqueName("minseq-a"), c = UniqueName("minseq-c");
  std::string upper = a;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto get = [&](SegmentStore& st, std::vector<std::string> keys) {
    auto r = st.GetMinSeqs(keys);
    REQUIRE_OK(r);
    return *r;
  };
  CHECK(get(s, {a, c}) == std::vector<int64_t>{0, 0});
  REQUIRE_OK(s.SetMinSeqs({{a, 5}, {c, 0}}, {}));
  CHECK(get(s, {c, a, upper}) == std::vector<int64_t>{0, 5, 0});  // keys are case-sensitive
  REQUIRE_OK(s.SetMinSeqs({{a, 3}, {upper, 9}}, {}));             // set again: replaced
  CHECK(get(s, {a, upper}) == std::vector<int64_t>{3, 9});
  CHECK(s.GetKey(a).error().code == ErrorCode::kUnknownKey);  // leaf_alloc untouched
  // Max IDs: the last reserved (max_id - 1), 0 without a row, none created.
  const std::string r = UniqueName("maxid");
  REQUIRE_OK(s.CreateKey(r, 10, ""));
  {
    auto m = s.GetMaxIds({r, a, r});
    REQUIRE_OK(m);
    CHECK(*m == std::vector<int64_t>{0, 0, 0});
  }
  CheckSegment(s.Reserve(r, std::nullopt), 1, 10, 10);
  {
    auto m = s.GetMaxIds({a, r});
    REQUIRE_OK(m);
    CHECK(*m == std::vector<int64_t>{0, 10});
  }
  CHECK(s.GetKey(a).error().code == ErrorCode::kUnknownKey);
  // A full list (1000: not a power of two) in one transaction.
  std::vector<MinSeqValue> many;
  std::vector<std::string> keys;
  std::vector<int64_t> want;
  for (int i = 0; i < 1000; ++i) {
    many.push_back({UniqueName("minseq-m") + std::to_string(i), int64_t{1} << (i % 62)});
    keys.push_back(many.back().key);
    want.push_back(many.back().min_seq);
  }
  REQUIRE_OK(s.SetMinSeqs(many, {}));
  CHECK(get(s, keys) == want);
  // A fence that does not hold (or a store without cluster mode): refused,
  // nothing written.
  const Status fenced = s.SetMinSeqs({{a, 77}}, {ShardFence{4095, "nobody", 1}});
  CHECK_FALSE(fenced.ok());
  CHECK(get(s, {a}) == std::vector<int64_t>{3});
  {
    auto other = b.NewInstance();  // another process sharing the store
    CHECK(get(*other, {a, upper}) == std::vector<int64_t>{3, 9});
  }
  b.Reopen();
  CHECK(get(b.store(), {a, upper, c}) == std::vector<int64_t>{3, 9, 0});
}

void CheckLeafCreatedTable(Backend& b) {
  b.InstallLeafTable();
  SegmentStore& s = b.store();
  auto row = s.GetKey(kLeafTag);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1);
  CHECK(row->step == 2000);
  CHECK(row->description == kLeafDescription);
  if (b.tracks_update_time()) CHECK(row->update_time_ms > 0);
  CheckSegment(s.Reserve(kLeafTag, std::nullopt), 1, 2000, 2000);
  CheckSegment(s.Reserve(kLeafTag, std::nullopt), 2001, 4000, 2000);
  auto list = s.ListKeys("", 10);
  REQUIRE_OK(list);
  REQUIRE(!list->empty());
  CHECK(std::any_of(list->begin(), list->end(),
                    [](const KeyRow& r) { return r.key == kLeafTag && r.max_id == 4001; }));
  const std::string k = UniqueName("after-leaf");
  REQUIRE_OK(s.CreateKey(k, 10, ""));
  CheckSegment(s.Reserve(k, std::nullopt), 1, 10, 10);
}

#define SEQD_CONFORMANCE_CASES(BACKEND, NAME)                                           \
  TEST_CASE(NAME ": create, get, set step, duplicate and unknown keys") {               \
    BACKEND b;                                                                          \
    CheckCrud(b);                                                                       \
  }                                                                                     \
  TEST_CASE(NAME ": list keys in order, paged with after + limit") {                    \
    BACKEND b;                                                                          \
    CheckListPaging(b);                                                                 \
  }                                                                                     \
  TEST_CASE(NAME ": reserve yields Leaf's segments") {                                  \
    BACKEND b;                                                                          \
    CheckReserveSequence(b);                                                            \
  }                                                                                     \
  TEST_CASE(NAME ": ReserveMany and CreateKeys, as the single calls would") {           \
    BACKEND b;                                                                          \
    CheckReserveMany(b);                                                                \
  }                                                                                     \
  TEST_CASE(NAME ": ReserveMany creates rows and reserves in one call") {               \
    BACKEND b;                                                                          \
    CheckCreateAndReserve(b);                                                           \
  }                                                                                     \
  TEST_CASE(NAME ": threads creating the same new keys get disjoint ranges") {          \
    BACKEND b;                                                                          \
    CheckConcurrentCreates(b);                                                          \
  }                                                                                     \
  TEST_CASE(NAME ": threads reserving overlapping batches get disjoint ranges") {       \
    BACKEND b;                                                                          \
    CheckConcurrentBatches(b);                                                          \
  }                                                                                     \
  TEST_CASE(NAME ": 8 threads x 50 reserves, own instances: disjoint and contiguous") { \
    BACKEND b;                                                                          \
    CheckConcurrentDisjoint(b);                                                         \
  }                                                                                     \
  TEST_CASE(NAME ": values persist across reopening") {                                 \
    BACKEND b;                                                                          \
    CheckPersistence(b);                                                                \
  }                                                                                     \
  TEST_CASE(NAME ": min seqs: 0 until set, set in one call, shared, durable") {         \
    BACKEND b;                                                                          \
    CheckMinSeqs(b);                                                                    \
  }                                                                                     \
  TEST_CASE(NAME ": a table created by Leaf works as-is") {                             \
    BACKEND b;                                                                          \
    CheckLeafCreatedTable(b);                                                           \
  }

// A local TCP port nobody listens on (bound then released).
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// A local TCP port that accepts connections (through the backlog) and never
// sends the MySQL greeting: a hung server. Closed with the object.
class SilentServer {
 public:
  SilentServer() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(fd_, 16) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() { close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

// ParseUrl refuses `url` with kInvalidArgument, saying `says`, and never
// shows its password (hunter2).
void CheckUrlRefused(const std::string& url, const std::string& says) {
  INFO(url);
  auto r = MysqlStore::ParseUrl(url);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  CHECK(r.error().message.find(says) != std::string::npos);
  CHECK(r.error().message.find("hunter2") == std::string::npos);
}

}  // namespace

// ================================================================ suites

TEST_SUITE("memory"){SEQD_CONFORMANCE_CASES(MemoryBackend, "memory")}

TEST_SUITE("sqlite") {
  SEQD_CONFORMANCE_CASES(SqliteBackend, "sqlite")

  TEST_CASE("sqlite: 4 processes share one file without overlapping segments") {
    // No SQLite connection may be open across fork(): set up, then close.
    const fs::path out_dir = MakeTempDir("seqd-conformance-");
    const std::string path = (out_dir / "shared.db").string();
    const std::string k = UniqueName("multiproc");
    {
      auto setup = OpenSqlite(path);
      REQUIRE_OK(setup->EnsureSchema());
      REQUIRE_OK(setup->CreateKey(k, 10, ""));
    }
    constexpr int kProcs = 4;
    constexpr int kPerProc = 50;
    std::vector<pid_t> pids;
    for (int p = 0; p < kProcs; ++p) {
      pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        // Child: no doctest macros here, report through a file and exit code.
        SqliteStore store(path);
        std::ofstream out(out_dir / ("segments." + std::to_string(p)));
        int failures = 0;
        for (int i = 0; i < kPerProc; ++i) {
          auto r = store.Reserve(k, std::nullopt);
          if (r.ok()) {
            out << r->first << " " << r->last << "\n";
          } else {
            ++failures;
          }
        }
        out.close();
        _exit(failures == 0 ? 0 : 1);
      }
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      REQUIRE(waitpid(pid, &status, 0) == pid);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
    std::vector<std::pair<int64_t, int64_t>> segs;
    for (int p = 0; p < kProcs; ++p) {
      std::ifstream in(out_dir / ("segments." + std::to_string(p)));
      int64_t first = 0, last = 0;
      while (in >> first >> last) segs.emplace_back(first, last);
    }
    REQUIRE(segs.size() == kProcs * kPerProc);
    std::sort(segs.begin(), segs.end());
    CHECK(segs.front().first == 1);
    for (size_t i = 1; i < segs.size(); ++i) CHECK(segs[i].first == segs[i - 1].second + 1);
    CHECK(segs.back().second == kProcs * kPerProc * 10);
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }

  TEST_CASE("sqlite: processes opening one NEW file at the same moment all succeed") {
    // Turning a new file to WAL takes an exclusive lock that SQLite does not
    // wait for: seqd processes started together must retry, not fail.
    const fs::path out_dir = MakeTempDir("seqd-conformance-");
    for (int round = 0; round < 20; ++round) {
      const std::string path = (out_dir / ("new." + std::to_string(round) + ".db")).string();
      constexpr int kProcs = 6;
      std::vector<pid_t> pids;
      for (int p = 0; p < kProcs; ++p) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {  // child: no doctest macros; the exit code reports
          auto store = SqliteStore::Open(path);
          _exit(store.ok() && store.value()->EnsureSchema().ok() ? 0 : 1);
        }
        pids.push_back(pid);
      }
      for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
      }
    }
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  }

  TEST_CASE("sqlite: unopenable path gives kStoreUnavailable, not a crash") {
    auto opened = SqliteStore::Open("/proc/seqd-no-such-dir/leaf.db");
    CHECK_ERR(opened, ErrorCode::kStoreUnavailable);
    SqliteStore lazy("/proc/seqd-no-such-dir/leaf.db");  // constructor never fails
    CHECK_ERR(lazy.Ping(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(lazy.Reserve("k", std::nullopt), ErrorCode::kStoreUnavailable);
    CHECK_ERR(lazy.EnsureSchema(), ErrorCode::kStoreUnavailable);
  }

  TEST_CASE("sqlite: a held write lock makes Reserve wait, then kStoreUnavailable") {
    SqliteBackend b;
    const std::string k = UniqueName("locked");
    REQUIRE_OK(b.store().CreateKey(k, 10, ""));
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(b.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto start = Clock::now();
    auto r = b.store().Reserve(k, std::nullopt);
    const auto waited = Clock::now() - start;
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) CHECK(r.error().message.find("reserve") != std::string::npos);
    CHECK(waited >= std::chrono::milliseconds(4500));
    CHECK(waited < std::chrono::seconds(15));
    // While the lock is held, another writer finishing its wait succeeds.
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    });
    CheckSegment(b.store().Reserve(k, std::nullopt), 1, 10, 10);
    releaser.join();
    sqlite3_close(db);
  }
}

TEST_SUITE("misc") {
  TEST_CASE("MysqlStore::ParseUrl takes TLS options") {
    using Ssl = MysqlOptions::SslMode;
    auto none = MysqlStore::ParseUrl("mysql://u:p@h/d");
    REQUIRE(none.ok());
    CHECK(none->ssl_mode == Ssl::kDefault);
    CHECK(none->ssl_ca.empty());
    auto full = MysqlStore::ParseUrl(
        "mysql://u:p@h/d?ssl-mode=verify_identity&ssl-ca=/etc/ca%20dir/ca.pem"
        "&ssl-cert=/c.pem&ssl-key=/k.pem&rw_timeout=3");
    REQUIRE(full.ok());
    CHECK(full->ssl_mode == Ssl::kVerifyIdentity);
    CHECK(full->ssl_ca == "/etc/ca dir/ca.pem");
    CHECK(full->ssl_cert == "/c.pem");
    CHECK(full->ssl_key == "/k.pem");
    CHECK(full->rw_timeout_s == 3);
    for (auto [text, mode] :
         std::vector<std::pair<std::string, Ssl>>{{"DISABLED", Ssl::kDisabled},
                                                  {"PREFERRED", Ssl::kPreferred},
                                                  {"REQUIRED", Ssl::kRequired},
                                                  {"VERIFY_CA&ssl-ca=/ca.pem", Ssl::kVerifyCa}}) {
      auto r = MysqlStore::ParseUrl("mysql://u:p@h/d?ssl-mode=" + text);
      REQUIRE_MESSAGE(r.ok(), text);
      CHECK(r->ssl_mode == mode);
    }
    for (auto [url, says] : std::vector<std::pair<std::string, std::string>>{
             {"mysql://u:hunter2@h/d?ssl-mode=SOMETIMES", "ssl-mode must be"},
             {"mysql://u:hunter2@h/d?ssl-mode=VERIFY_CA", "need ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-mode=VERIFY_IDENTITY", "need ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-cert=/c.pem", "go together"},
             {"mysql://u:hunter2@h/d?ssl-key=/k.pem", "go together"},
             {"mysql://u:hunter2@h/d?ssl-ca=", "needs a file path"},
             {"mysql://u:hunter2@h/d?ssl-ca=%zz", "malformed %-escape in ssl-ca"},
             {"mysql://u:hunter2@h/d?ssl-mode=DISABLED&ssl-ca=/ca.pem", "DISABLED with"},
             {"mysql://u:hunter2@h/d?sslmode=REQUIRED", "unknown parameter"},
         }) {
      CheckUrlRefused(url, says);
    }
  }

  TEST_CASE("MysqlStore::ParseUrl accepts good URLs") {
    auto full = MysqlStore::ParseUrl("mysql://seqd:secret@db.example.com:3307/leaf");
    REQUIRE_OK(full);
    CHECK(full->user == "seqd");
    CHECK(full->password == "secret");
    CHECK(full->hosts == std::vector<MysqlHost>{{"db.example.com", 3307}});
    CHECK(full->database == "leaf");
    CHECK(full->pool_size == 4);

    auto minimal = MysqlStore::ParseUrl("mysql://root@127.0.0.1/seqd_test");
    REQUIRE_OK(minimal);
    CHECK(minimal->user == "root");
    CHECK(minimal->password.empty());
    CHECK(minimal->hosts == std::vector<MysqlHost>{{"127.0.0.1", 3306}});
    CHECK(minimal->database == "seqd_test");

    auto empty_pass = MysqlStore::ParseUrl("mysql://u:@h/d");
    REQUIRE_OK(empty_pass);
    CHECK(empty_pass->password.empty());

    auto escaped = MysqlStore::ParseUrl("mysql://us%40er:p%3Aa%2Fs%25s%40@localhost:1/db");
    REQUIRE_OK(escaped);
    CHECK(escaped->user == "us@er");
    CHECK(escaped->password == "p:a/s%s@");
    CHECK(escaped->hosts == std::vector<MysqlHost>{{"localhost", 1}});

    auto raw_at = MysqlStore::ParseUrl("mysql://u:p@ss@h:65535/d");
    REQUIRE_OK(raw_at);
    CHECK(raw_at->password == "p@ss");
    CHECK(raw_at->hosts == std::vector<MysqlHost>{{"h", 65535}});

    auto tuned =
        MysqlStore::ParseUrl("mysql://u:p@h/d?rw_timeout=2&connect_timeout=1&retry_budget_ms=250");
    REQUIRE(tuned.ok());
    CHECK(tuned->database == "d");
    CHECK(tuned->rw_timeout_s == 2);
    CHECK(tuned->connect_timeout_s == 1);
    CHECK(tuned->retry_budget_ms == 250);
    auto v6 = MysqlStore::ParseUrl("mysql://u:p@[::1]:3308/d");
    REQUIRE_OK(v6);
    CHECK(v6->hosts == std::vector<MysqlHost>{{"::1", 3308}});
  }

  TEST_CASE("MysqlStore::ParseUrl rejects malformed URLs with kInvalidArgument") {
    const char* bad[] = {
        "",
        "mysql://",
        "mysql:/u:p@h/d",
        "postgres://u:p@h:5432/d",
        "MYSQL//u:p@h/d",
        "mysql://h:3306/d",               // no user
        "mysql://:p@h/d",                 // empty user
        "mysql://u:p@/d",                 // empty host
        "mysql://u:p@:3306/d",            // empty host
        "mysql://u:p@h",                  // no database
        "mysql://u:p@h/",                 // empty database
        "mysql://u:p@h:/d",               // empty port
        "mysql://u:p@h:0/d",              // port out of range
        "mysql://u:p@h:65536/d",          // port out of range
        "mysql://u:p@h:-1/d",             // negative port
        "mysql://u:p@h:33o6/d",           // not a number
        "mysql://u:p@h:3306:1/d",         // two ports
        "mysql://u:p@h/d?ssl=1",          // unknown parameter
        "mysql://u:p@h/d?rw_timeout",     // no value
        "mysql://u:p@h/d?rw_timeout=0",   // out of range
        "mysql://u:p@h/d?rw_timeout=5s",  // not a number
        "mysql://u:p@h/d?retry_budget_ms=-1&rw_timeout=2",
        "mysql://u:p@h/d/e",    // path
        "mysql://u:p@h/d%2fe",  // path, escaped
        "mysql://u:p@h/d%00",   // NUL in the database
        "mysql://u:p%zz@h/d",   // bad escape in password
        "mysql://u:p%4@h/d",    // truncated escape
        "mysql://u%g0:p@h/d",   // bad escape in user
        "mysql://u:p@h o/d",    // space in host
        "mysql://u:p@[::1/d",   // unterminated IPv6
    };
    for (const char* url : bad) {
      CAPTURE(url);
      auto r = MysqlStore::ParseUrl(url);
      CHECK_ERR(r, ErrorCode::kInvalidArgument);
      if (!r.ok()) CHECK_FALSE(r.error().message.empty());
    }
    // Errors name the problem but never echo the password.
    auto r = MysqlStore::ParseUrl("mysql://u:hunter2@h:99999/d");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("port") != std::string::npos);
    CHECK(r.error().message.find("hunter2") == std::string::npos);
    r = MysqlStore::ParseUrl("mysql://u:hunter2%zz@h/d");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("password") != std::string::npos);
    CHECK(r.error().message.find("hunter2") == std::string::npos);
  }

  TEST_CASE("MysqlStore::ParseUrl takes a list of hosts") {
    auto three = MysqlStore::ParseUrl("mysql://u:p@h1:3306,h2,[::1]:3308/d?rw_timeout=2");
    REQUIRE_OK(three);
    CHECK(three->hosts == std::vector<MysqlHost>{{"h1", 3306}, {"h2", 3306}, {"::1", 3308}});
    CHECK(three->database == "d");
    CHECK(three->rw_timeout_s == 2);
    CHECK(DescribeMysql(*three) == "u@h1:3306,h2:3306,[::1]:3308/d");
    // The same host on two ports is two servers.
    auto ports = MysqlStore::ParseUrl("mysql://u:p@127.0.0.1:3306,127.0.0.1:3307/d");
    REQUIRE_OK(ports);
    CHECK(ports->hosts.size() == 2);
    std::string sixteen;
    for (int i = 1; i <= 16; ++i) sixteen += (i > 1 ? ",h" : "h") + std::to_string(i);
    auto most = MysqlStore::ParseUrl("mysql://u:p@" + sixteen + "/d");
    REQUIRE_OK(most);
    CHECK(most->hosts.size() == MysqlOptions::kMaxHosts);
    CHECK(most->hosts.back() == MysqlHost{"h16", 3306});

    for (auto [url, says] : std::vector<std::pair<std::string, std::string>>{
             {"mysql://u:hunter2@h1,/d", "host 2 of the list: empty host"},
             {"mysql://u:hunter2@,h2/d", "host 1 of the list: empty host"},
             {"mysql://u:hunter2@h1,,h3/d", "host 2 of the list: empty host"},
             {"mysql://u:hunter2@,/d", "empty host"},
             {"mysql://u:hunter2@h1:3306,h2:/d", "host 2 of the list: empty port"},
             {"mysql://u:hunter2@h1,h2:0/d", "host 2 of the list: port must be"},
             {"mysql://u:hunter2@h1,h2:70000/d", "port must be"},
             {"mysql://u:hunter2@h1:x,h2/d", "host 1 of the list: port must be"},
             {"mysql://u:hunter2@h1,h 2/d", "invalid character"},
             {"mysql://u:hunter2@h1,[::1/d", "unterminated"},
             {"mysql://u:hunter2@h1:3306,h1/d", "host 2 of the list is listed twice"},
             {"mysql://u:hunter2@" + sixteen + ",h17/d", "more than 16 hosts"},
             {"mysql://u:hunter2@h1,h2/d?wsrep_sync_wait=16", "wsrep_sync_wait must be"},
         }) {
      CheckUrlRefused(url, says);
    }
    auto wait = MysqlStore::ParseUrl("mysql://u:p@h1,h2/d?wsrep_sync_wait=3");
    REQUIRE_OK(wait);
    CHECK(wait->wsrep_sync_wait == 3);
    CHECK(MysqlStore::ParseUrl("mysql://u:p@h/d")->wsrep_sync_wait == -1);
  }

  TEST_CASE("MysqlHostOrder: the last good host first, failed hosts last, the latest last") {
    using V = std::vector<size_t>;
    const auto order = [](size_t preferred, std::vector<uint64_t> failed) {
      return MysqlHostOrder(preferred, failed);
    };
    CHECK(order(0, {0}) == V{0});
    CHECK(order(0, {7}) == V{0});  // one host: always tried
    CHECK(order(0, {0, 0, 0}) == V{0, 1, 2});
    CHECK(order(1, {0, 0, 0}) == V{1, 2, 0});  // round the list from the last good one
    CHECK(order(2, {0, 0, 0}) == V{2, 0, 1});
    CHECK(order(0, {5, 0, 0}) == V{1, 2, 0});  // the last good one failed: the next
    CHECK(order(1, {0, 3, 0}) == V{2, 0, 1});
    CHECK(order(0, {5, 0, 4}) == V{1, 2, 0});  // failed ones by failure, earliest first
    CHECK(order(0, {4, 0, 5}) == V{1, 0, 2});
    CHECK(order(1, {2, 1, 3}) == V{1, 0, 2});  // all failed: the earliest failure first
  }

  TEST_CASE("MysqlStore with several hosts: the ones that refuse are passed over") {
    // Two closed ports, then nothing: the error says every host was tried,
    // names each one's failure (for the log) and never the password.
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", ClosedPort()}, {"127.0.0.1", ClosedPort()}};
    while (o.hosts[1].port == o.hosts[0].port) o.hosts[1].port = ClosedPort();
    o.user = "seqd";
    o.password = "hunter2";
    o.database = "seqd_test";
    o.retry_budget_ms = 0;
    MysqlStore store(o);
    const auto start = Clock::now();
    Status st = store.Ping();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kStoreUnavailable);
    CHECK(st.error().message.find("no host of 2") != std::string::npos);
    for (const MysqlHost& h : o.hosts) {
      CHECK(st.error().message.find("127.0.0.1:" + std::to_string(h.port)) != std::string::npos);
    }
    CHECK(st.error().message.find("hunter2") == std::string::npos);
    CHECK(Clock::now() - start < std::chrono::seconds(2));
  }

  TEST_CASE("OpenStore rejects bad specs and opens good ones") {
    for (const char* spec : {"", "sqlite", "sqlite:", "foo:bar", "/tmp/x.db", "postgres://u@h/d",
                             "SQLITE:/tmp/x.db", "mysql:/u:p@h/d"}) {
      CAPTURE(spec);
      auto r = OpenStore(spec);
      CHECK_ERR(r, ErrorCode::kInvalidArgument);
      if (!r.ok()) {
        CHECK(r.error().message.find("--store") != std::string::npos);
      }
    }
    auto unknown = OpenStore("foo:bar");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message ==
          "--store: expected sqlite:PATH or mysql://user:pass@host:port/db, got 'foo:bar'");

    auto bad_mysql = OpenStore("mysql://u:hunter2@h:0/d");
    CHECK_ERR(bad_mysql, ErrorCode::kInvalidArgument);
    if (!bad_mysql.ok()) CHECK(bad_mysql.error().message.find("hunter2") == std::string::npos);

    const fs::path dir = MakeTempDir("seqd-conformance-");
    {
      auto sqlite = OpenStore("sqlite:" + (dir / "a" / "b" / "seqd.db").string());
      REQUIRE_OK(sqlite);
      const std::string k = UniqueName("factory");
      REQUIRE_OK((*sqlite)->CreateKey(k, 5, ""));  // EnsureSchema already ran
      CheckSegment((*sqlite)->Reserve(k, std::nullopt), 1, 5, 5);
    }
    fs::remove_all(dir);

    // A MySQL spec does not connect: no server is needed to get a store.
    const auto start = Clock::now();
    auto mysql = OpenStore("mysql://u:p@127.0.0.1:" + std::to_string(ClosedPort()) + "/d");
    REQUIRE_OK(mysql);
    CHECK(Clock::now() - start < std::chrono::seconds(1));
    CHECK_ERR((*mysql)->Ping(), ErrorCode::kStoreUnavailable);
  }

  TEST_CASE("MysqlStore against a closed port: kStoreUnavailable within seconds") {
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", ClosedPort()}};
    o.user = "seqd";
    o.password = "hunter2";
    o.database = "seqd_test";
    o.pool_size = 2;
    MysqlStore store(o);
    const auto start = Clock::now();
    auto ping = store.Ping();
    CHECK_ERR(ping, ErrorCode::kStoreUnavailable);
    if (!ping.ok()) {
      MESSAGE("closed port error: ", ping.error().message);
      CHECK(ping.error().message.find("hunter2") == std::string::npos);
      CHECK(ping.error().message.find("200") != std::string::npos);  // MySQL error 200x
    }
    CHECK_ERR(store.EnsureSchema(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.Reserve("k", std::nullopt), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.CreateKey("k", 1, ""), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.GetKey("k"), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.ListKeys("", 10), ErrorCode::kStoreUnavailable);
    CHECK_ERR(store.SetStep("k", 2), ErrorCode::kStoreUnavailable);
    // Many callers at once with a pool of 2: nobody hangs, the pool recovers.
    std::vector<std::thread> threads;
    std::atomic<int> unavailable{0};
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 5; ++i) {
          auto r = store.Reserve("k", 10);
          if (!r.ok() && r.error().code == ErrorCode::kStoreUnavailable) ++unavailable;
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(unavailable == 40);
    CHECK(Clock::now() - start < std::chrono::seconds(5));
  }

  TEST_CASE("MysqlStore against a server that never answers: bounded by the timeouts") {
    const SilentServer silent;
    MysqlOptions o;
    o.hosts = {{"127.0.0.1", silent.port()}};
    o.user = "seqd";
    o.database = "seqd_test";
    o.connect_timeout_s = 1;
    o.rw_timeout_s = 1;
    MysqlStore store(o);
    const auto start = Clock::now();
    auto r = store.Reserve("k", std::nullopt);
    const auto took = Clock::now() - start;
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) MESSAGE("silent server error: ", r.error().message);
    MESSAGE("silent server detected in ",
            std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), " ms");
    CHECK(took < std::chrono::seconds(10));
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: a batch maps keys to rows by the table's collation (case-insensitive)") {
    MysqlBackend b;
    SegmentStore& s = b.store();
    const std::string k = UniqueName("CaseKey");
    REQUIRE_OK(s.CreateKey(k, 10, ""));
    std::string lower = k, upper = k;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // Three spellings of one row, and a key that is no row in any case.
    auto got = s.ReserveMany({{k, std::nullopt, {}},
                              {lower, std::nullopt, {}},
                              {upper, std::nullopt, {}},
                              {UniqueName("NoSuchCase"), std::nullopt, {}}});
    REQUIRE(got.size() == 4);
    CheckSegment(got[0], 1, 10, 10);
    CheckSegment(got[1], 11, 20, 10);
    CheckSegment(got[2], 21, 30, 10);
    CHECK_ERR(got[3], ErrorCode::kUnknownKey);
    // The single-key call agrees (the same row, as MySQL compares).
    CheckSegment(s.Reserve(lower, std::nullopt), 31, 40, 10);
  }

  TEST_CASE("mariadb: SEQD_TEST_MYSQL_URL is set and the server answers") {
    MysqlStore store(TestMysqlOptions());
    REQUIRE_OK(store.Ping());
    REQUIRE_OK(store.EnsureSchema());
  }

  SEQD_CONFORMANCE_CASES(MysqlBackend, "mariadb")

  TEST_CASE("mariadb: several hosts: a silent one is passed over once, then the good one first") {
    // Host 1 accepts TCP connections and never answers (a hung server: the
    // connect timeout, 1 s, runs out); host 2 is the server under test.
    const SilentServer silent;
    MysqlOptions o = TestMysqlOptions();
    o.hosts.insert(o.hosts.begin(), MysqlHost{"127.0.0.1", silent.port()});
    o.connect_timeout_s = 1;
    o.retry_budget_ms = 5000;
    MysqlStore store(o);
    auto start = Clock::now();
    REQUIRE_OK(store.Ping());
    CHECK(Clock::now() - start >= std::chrono::milliseconds(900));  // host 1 tried once
    // Both connections of the pool at once: the second is opened on host 2
    // at once, host 1 is not tried again.
    start = Clock::now();
    std::thread other([&] { CHECK(store.Ping().ok()); });
    REQUIRE_OK(store.Ping());
    other.join();
    CHECK(Clock::now() - start < std::chrono::milliseconds(800));
    // Host 2's connections killed: the store serves again (host 2 is the
    // only one that answers, so it is back after host 1's timeout at most).
    auto raw = RawMysql(TestMysqlOptions());
    KillConnections(*raw, OtherConnectionIds(*raw, o.user));
    const std::string k = UniqueName("hosts");
    REQUIRE_OK(store.CreateKey(k, 10, ""));
    CheckSegment(store.Reserve(k, std::nullopt), 1, 10, 10);
  }

  TEST_CASE("mariadb: after KILL of the store's connections the next call reconnects") {
    MysqlBackend b;
    MysqlStore& s = b.mysql();
    const std::string k = UniqueName("kill");
    REQUIRE_OK(s.CreateKey(k, 10, ""));
    CheckSegment(s.Reserve(k, std::nullopt), 1, 10, 10);

    const RawHosts raw(b.options());
    auto other_ids = [&] { return raw.OtherIds(b.options().user); };
    int64_t last = 10;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      // Make the pool hold both of its connections.
      std::thread other([&] { (void)s.Ping(); });
      (void)s.Ping();
      other.join();

      const std::vector<RawHosts::ConnId> ids = other_ids();
      REQUIRE_FALSE(ids.empty());
      raw.Kill(ids);
      auto r = s.Reserve(k, std::nullopt);
      REQUIRE_MESSAGE(r.ok(), "Reserve after KILL: ", Describe(r));
      // A retried reservation may skip a segment but never repeat one.
      CHECK(r->first > last);
      CHECK(r->last - r->first + 1 == 10);
      last = r->last;
      REQUIRE_OK(s.Ping());
      REQUIRE_OK(s.GetKey(k));
      // The store now runs on new connections.
      // (Killed threads may linger in PROCESSLIST for a moment.)
      std::vector<RawHosts::ConnId> now;
      bool any_old = true;
      for (int i = 0; i < 50 && any_old; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        now = other_ids();
        any_old = std::any_of(now.begin(), now.end(), [&](const RawHosts::ConnId& id) {
          return std::find(ids.begin(), ids.end(), id) != ids.end();
        });
      }
      CHECK_FALSE(now.empty());
      CHECK_FALSE(any_old);
    }
  }

  TEST_CASE("mariadb: wrong password is kStoreUnavailable and not echoed") {
    MysqlOptions o = TestMysqlOptions();
    o.password = "definitely-wrong-pw";
    MysqlStore store(o);
    auto r = store.Ping();
    CHECK_ERR(r, ErrorCode::kStoreUnavailable);
    if (!r.ok()) {
      CHECK(r.error().message.find("1045") != std::string::npos);
      CHECK(r.error().message.find("definitely-wrong-pw") == std::string::npos);
    }
  }

  TEST_CASE("mariadb: the password from the config overrides the URL's") {
    const char* url = std::getenv("SEQD_TEST_MYSQL_URL");
    REQUIRE(url != nullptr);
    const MysqlOptions good = TestMysqlOptions();
    // The URL without its password (or with a wrong one): the store
    // connects with the password given apart (file or environment).
    const std::string wrong = "mysql://" + good.user + ":not-it@" + good.hosts[0].host + ":" +
                              std::to_string(good.hosts[0].port) + "/" + good.database;
    StoreNeeds needs;
    needs.password = good.password;
    auto stores = OpenStores(wrong, needs);
    REQUIRE(stores.ok());
    REQUIRE_OK(stores->segments->Ping());
    REQUIRE_OK(stores->messages->Ping());
    // Without it, the URL's wrong password is used, and never echoed.
    auto plain = OpenStores(wrong, StoreNeeds{});
    REQUIRE(plain.ok());
    Status ping = plain->segments->Ping();
    CHECK_ERR(ping, ErrorCode::kStoreUnavailable);
    if (!ping.ok()) CHECK(ping.error().message.find("not-it") == std::string::npos);
  }

  TEST_CASE("mariadb: SQL errors map to kInternal, keys stay usable") {
    MysqlBackend b;
    // Over-long key (varchar(128)) in strict mode: an SQL error, not a crash.
    const std::string huge(300, 'x');
    auto r = b.store().CreateKey(huge, 10, "");
    if (!r.ok()) {
      CHECK(r.error().code == ErrorCode::kInternal);
      CHECK(r.error().message.find("MySQL error") != std::string::npos);
    } else {
      MESSAGE("server truncated the key silently (non-strict sql_mode)");
    }
    const std::string k = UniqueName("after-error");
    REQUIRE_OK(b.store().CreateKey(k, 10, ""));
    CheckSegment(b.store().Reserve(k, std::nullopt), 1, 10, 10);
  }
}

}  // namespace seqd
