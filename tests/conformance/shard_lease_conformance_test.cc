// ShardLeaseStore conformance: the memory store and MariaDB
// (SEQD_TEST_MYSQL_URL) give the same answers: the shard count fixed once,
// compare-and-set takeovers (exactly one of many racers wins), renewals and
// releases fenced by owner and epoch, members and heartbeats.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conformance_support.h"
#include "storage/memory/memory_shard_lease_store.h"
#include "storage/memory/memory_store.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_shard_lease_store.h"
#include "storage/mysql/mysql_store.h"

namespace seqd {
namespace {

using conformance::RawExec;
using conformance::RawMysql;
using conformance::TestMysqlOptions;

struct Backend {
  virtual ~Backend() = default;
  virtual ShardLeaseStore& store() = 0;
  // Another handle on the same data (another process's store).
  virtual std::unique_ptr<ShardLeaseStore> Another() = 0;
};

struct MemoryBackend final : Backend {
  MemoryShardLeaseStore mem;
  ShardLeaseStore& store() override { return mem; }
  std::unique_ptr<ShardLeaseStore> Another() override { return nullptr; }
};

struct MysqlBackend final : Backend {
  MysqlBackend() : options(TestMysqlOptions()) {
    auto raw = RawMysql(options);
    for (const char* t : {"seqd_shard_lease", "seqd_cluster", "seqd_cluster_member"}) {
      RawExec(*raw, std::string("DROP TABLE IF EXISTS ") + t);
    }
    mysql = std::make_unique<MysqlShardLeaseStore>(std::make_shared<MysqlPool>(options));
  }
  ShardLeaseStore& store() override { return *mysql; }
  std::unique_ptr<ShardLeaseStore> Another() override {
    MysqlOptions o = options;
    o.pool_size = 1;
    return std::make_unique<MysqlShardLeaseStore>(std::make_shared<MysqlPool>(o));
  }
  MysqlOptions options;
  std::unique_ptr<MysqlShardLeaseStore> mysql;
};

void CheckSchemaAndLeases(Backend& b) {
  ShardLeaseStore& s = b.store();
  auto n = s.EnsureSchema(16);
  REQUIRE_MESSAGE(n.ok(), (n.ok() ? std::string() : n.error().message));
  CHECK(*n == 16);
  auto again = s.EnsureSchema(1024);  // fixed at creation
  REQUIRE(again.ok());
  CHECK(*again == 16);
  CHECK(s.EnsureSchema(0).error().code == ErrorCode::kInvalidArgument);

  auto rows = s.ReadLeases();
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 16);
  CHECK((*rows)[3] == ShardLeaseRow{3, "", 0, 0});

  // Acquire: a CAS on the version.
  auto a = s.Acquire(3, 0, "inst-a");
  REQUIRE(a.ok());
  CHECK(*a == ShardLeaseRow{3, "inst-a", 1, 1});
  auto stale = s.Acquire(3, 0, "inst-b");
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.error().code == ErrorCode::kFailedPrecondition);

  // Renew: fenced by owner and epoch.
  auto r = s.Renew(3, "inst-a", 1);
  REQUIRE(r.ok());
  CHECK(*r == ShardLeaseRow{3, "inst-a", 1, 2});
  CHECK(s.Renew(3, "inst-a", 0).error().code == ErrorCode::kFailedPrecondition);
  CHECK(s.Renew(3, "inst-b", 1).error().code == ErrorCode::kFailedPrecondition);

  // A takeover at the version seen: new owner, epoch + 1; the old owner is fenced.
  auto t = s.Acquire(3, 2, "inst-b");
  REQUIRE(t.ok());
  CHECK(*t == ShardLeaseRow{3, "inst-b", 2, 3});
  CHECK(s.Renew(3, "inst-a", 1).error().code == ErrorCode::kFailedPrecondition);
  REQUIRE(s.Release(3, "inst-a", 1).ok());  // not held: nothing happens
  CHECK(s.ReadLeases()->at(3) == ShardLeaseRow{3, "inst-b", 2, 3});

  // Release: free at once, version + 1.
  REQUIRE(s.Release(3, "inst-b", 2).ok());
  CHECK(s.ReadLeases()->at(3) == ShardLeaseRow{3, "", 2, 4});
  CHECK(s.Renew(3, "inst-b", 2).error().code == ErrorCode::kFailedPrecondition);
  auto back = s.Acquire(3, 4, "inst-a");
  REQUIRE(back.ok());
  CHECK(*back == ShardLeaseRow{3, "inst-a", 3, 5});
  // RenewAll: every row of the owner, version + 1 each.
  REQUIRE(s.Acquire(7, 0, "inst-a").ok());
  auto all = s.RenewAll("inst-a");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK(all->at(0) == ShardLeaseRow{3, "inst-a", 3, 6});
  CHECK(all->at(1) == ShardLeaseRow{7, "inst-a", 1, 2});
  CHECK(s.RenewAll("nobody")->empty());
  CHECK(s.Acquire(99, 0, "inst-a").error().code == ErrorCode::kInvalidArgument);
  CHECK(s.Acquire(1, 0, "").error().code == ErrorCode::kInvalidArgument);
}

void CheckRacers(Backend& b, int racers) {
  ShardLeaseStore& s = b.store();
  REQUIRE(s.EnsureSchema(16).ok());
  std::vector<std::unique_ptr<ShardLeaseStore>> others;
  for (int i = 0; i < racers; ++i) others.push_back(b.Another());
  for (int round = 0; round < 5; ++round) {
    const int64_t version = s.ReadLeases()->at(5).version;
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < racers; ++i) {
      threads.emplace_back([&, i] {
        ShardLeaseStore& mine = others[i] ? *others[i] : s;
        auto r = mine.Acquire(5, version, "racer-" + std::to_string(i));
        if (r.ok()) {
          ++won;
        } else {
          CHECK(r.error().code == ErrorCode::kFailedPrecondition);
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(won.load() == 1);
    const ShardLeaseRow row = s.ReadLeases()->at(5);
    CHECK(row.version == version + 1);
    CHECK(row.owner.rfind("racer-", 0) == 0);
  }
}

// The batches: one commit for many shards; lost races are left out.
void CheckBatches(Backend& b) {
  ShardLeaseStore& s = b.store();
  REQUIRE(s.EnsureSchema(16).ok());
  auto rows = s.ReadLeases();
  REQUIRE(rows.ok());
  // inst-b wins shard 9 first: inst-a's batch at the old version loses it.
  REQUIRE(s.Acquire(9, rows->at(9).version, "inst-b").ok());
  std::vector<std::pair<uint32_t, int64_t>> wanted;
  for (uint32_t shard : {2u, 9u, 11u, 12u}) wanted.emplace_back(shard, rows->at(shard).version);
  auto taken = s.AcquireMany("inst-a", wanted);
  REQUIRE_MESSAGE(taken.ok(), (taken.ok() ? std::string() : taken.error().message));
  REQUIRE(taken->size() == 3);
  CHECK(taken->at(0).shard == 2);
  CHECK(taken->at(1).shard == 11);
  CHECK(taken->at(2).shard == 12);
  for (const ShardLeaseRow& row : *taken) {
    const ShardLeaseRow before = rows->at(row.shard);
    CHECK(row == ShardLeaseRow{row.shard, "inst-a", before.epoch + 1, before.version + 1});
    CHECK(s.ReadLeases()->at(row.shard) == row);
  }
  CHECK(s.ReadLeases()->at(9).owner == "inst-b");
  // Another taker at the same versions: every version moved, nothing
  // taken, no error.
  auto again = s.AcquireMany("inst-c", wanted);
  REQUIRE(again.ok());
  CHECK(again->empty());
  CHECK(s.AcquireMany("", wanted).error().code == ErrorCode::kInvalidArgument);

  // ReleaseMany frees the rows still held at their epochs; a row at a stale
  // epoch (taken over meanwhile) is left alone.
  std::vector<ShardLeaseRow> held = *taken;
  held.push_back(ShardLeaseRow{9, "inst-b", 0, 0});             // inst-a never held 9
  REQUIRE(s.Acquire(12, taken->at(2).version, "inst-c").ok());  // 12 moved on
  REQUIRE(s.ReleaseMany("inst-a", held).ok());
  auto after = s.ReadLeases();
  CHECK(after->at(2).owner.empty());
  CHECK(after->at(2).version == taken->at(0).version + 1);
  CHECK(after->at(11).owner.empty());
  CHECK(after->at(12).owner == "inst-c");
  CHECK(after->at(9).owner == "inst-b");
  CHECK(s.RenewAll("inst-a")->empty());
  REQUIRE(s.ReleaseMany("inst-a", {}).ok());
}

void CheckMembers(Backend& b) {
  ShardLeaseStore& s = b.store();
  REQUIRE(s.EnsureSchema(16).ok());
  REQUIRE(s.Heartbeat("inst-a", "127.0.0.1:7001").ok());
  REQUIRE(s.Heartbeat("inst-b", "127.0.0.1:7002").ok());
  REQUIRE(s.Heartbeat("inst-a", "127.0.0.1:7001").ok());
  auto m = s.ReadMembers();
  REQUIRE(m.ok());
  REQUIRE(m->size() == 2);
  CHECK((*m)[0] == ClusterMember{"inst-a", "127.0.0.1:7001", 2, false});
  CHECK((*m)[1] == ClusterMember{"inst-b", "127.0.0.1:7002", 1, false});
  REQUIRE(s.Leave("inst-b").ok());
  CHECK(s.ReadMembers()->at(1) == ClusterMember{"inst-b", "127.0.0.1:7002", 2, true});
  REQUIRE(s.Heartbeat("inst-b", "127.0.0.1:7003").ok());  // back: left cleared
  CHECK(s.ReadMembers()->at(1) == ClusterMember{"inst-b", "127.0.0.1:7003", 3, false});
  CHECK(s.Heartbeat(std::string(200, 'x'), "h:1").error().code == ErrorCode::kInvalidArgument);
  // Forget only at the heartbeat seen: a member that beat meanwhile stays.
  REQUIRE(s.Forget("inst-b", 2).ok());
  CHECK(s.ReadMembers()->size() == 2);
  REQUIRE(s.Forget("inst-b", 3).ok());
  REQUIRE(s.ReadMembers()->size() == 1);
  CHECK(s.ReadMembers()->at(0).instance == "inst-a");
  CHECK(s.Forget("inst-b", 3).ok());  // absent: fine
}

}  // namespace

TEST_SUITE("memory") {
  TEST_CASE("memory: schema, CAS takeover, fenced renew and release") {
    MemoryBackend b;
    CheckSchemaAndLeases(b);
  }
  TEST_CASE("memory: of 8 racers for one version exactly one wins") {
    MemoryBackend b;
    CheckRacers(b, 8);
  }
  TEST_CASE("memory: AcquireMany and ReleaseMany") {
    MemoryBackend b;
    CheckBatches(b);
  }
  TEST_CASE("memory: members and heartbeats") {
    MemoryBackend b;
    CheckMembers(b);
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: schema, CAS takeover, fenced renew and release") {
    MysqlBackend b;
    CheckSchemaAndLeases(b);
  }
  TEST_CASE("mariadb: of 6 racers (own connections) for one version exactly one wins") {
    MysqlBackend b;
    CheckRacers(b, 6);
  }
  TEST_CASE("mariadb: AcquireMany and ReleaseMany in one transaction each") {
    MysqlBackend b;
    CheckBatches(b);
  }
  TEST_CASE("mariadb: AcquireMany skips a row locked by another transaction, takes the rest") {
    MysqlBackend b;
    MysqlOptions o = b.options;
    o.lock_wait_timeout_s = 1;
    MysqlShardLeaseStore store(std::make_shared<MysqlPool>(o));
    REQUIRE(store.EnsureSchema(16).ok());
    // An owner frozen in the middle of a fenced commit holds shard 4's row.
    auto frozen = RawMysql(b.options);
    RawExec(*frozen, "START TRANSACTION");
    RawExec(*frozen, "UPDATE seqd_shard_lease SET fences = fences + 1 WHERE shard = 4");
    auto taken = store.AcquireMany("inst-a", {{3, 0}, {4, 0}, {5, 0}});
    REQUIRE_MESSAGE(taken.ok(), (taken.ok() ? std::string() : taken.error().message));
    REQUIRE(taken->size() == 2);
    CHECK(taken->at(0).shard == 3);
    CHECK(taken->at(1).shard == 5);
    RawExec(*frozen, "ROLLBACK");
    CHECK(store.ReadLeases()->at(4).owner.empty());
    CHECK(store.ReadLeases()->at(5).owner == "inst-a");
  }
  TEST_CASE("mariadb: members and heartbeats") {
    MysqlBackend b;
    CheckMembers(b);
  }
  TEST_CASE("mariadb: a fenced reservation commits only while the lease is ours") {
    MysqlBackend b;
    ShardLeaseStore& leases = b.store();
    REQUIRE(leases.EnsureSchema(16).ok());
    MysqlStore ids(b.options);
    REQUIRE(ids.EnsureSchema().ok());
    const std::string key = conformance::UniqueName("fenced");
    REQUIRE(ids.CreateKey(key, 10, "").ok());
    auto mine = leases.Acquire(2, 0, "inst-a");
    REQUIRE(mine.ok());
    const ShardFence fence{2, "inst-a", mine->epoch};
    auto r = ids.ReserveFenced(key, std::nullopt, fence);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    CHECK(r->first == 1);
    CHECK(r->last == 10);
    // Taken over (epoch + 1): the old owner's reservation rolls back.
    REQUIRE(leases.Acquire(2, mine->version, "inst-b").ok());
    auto stale = ids.ReserveFenced(key, std::nullopt, fence);
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.error().code == ErrorCode::kNotServing);
    auto row = ids.GetKey(key);
    REQUIRE(row.ok());
    CHECK(row->max_id == 11);  // nothing reserved by the fenced-out call
    // The new owner, at its epoch, reserves the next segment.
    auto fresh = ids.ReserveFenced(key, std::nullopt, ShardFence{2, "inst-b", mine->epoch + 1});
    REQUIRE(fresh.ok());
    CHECK(fresh->first == 11);
    // A store without cluster support says so.
    MemoryStore memory;
    REQUIRE(memory.CreateKey(key, 10, "").ok());
    CHECK(memory.ReserveFenced(key, std::nullopt, fence).error().code ==
          ErrorCode::kFailedPrecondition);
  }
  TEST_CASE("mariadb: a fenced message batch commits only while every lease is ours") {
    MysqlBackend b;
    ShardLeaseStore& leases = b.store();
    REQUIRE(leases.EnsureSchema(16).ok());
    MysqlMessageStore messages(b.options);
    REQUIRE(messages.EnsureSchema().ok());
    std::vector<ShardLeaseRow> held;
    for (uint32_t shard : {3u, 4u, 5u}) {
      auto row = leases.Acquire(shard, 0, "inst-a");
      REQUIRE(row.ok());
      held.push_back(*row);
    }
    const std::string conv = conformance::UniqueName("fconv");
    auto batch = [&](const std::string& tag) {
      std::vector<AppendRequest> out;
      for (int i = 0; i < 3; ++i) {
        AppendRequest r;
        r.conv_id = conv;
        r.conv_id += std::to_string(i);
        r.sender_id = "u";
        r.client_msg_id = tag;  // appended, not `tag + ...`: GCC 12 warns (-Wrestrict) on that
        r.client_msg_id += std::to_string(i);
        r.payload = "p";
        r.server_msg_id = 1000 + i;
        out.push_back(r);
      }
      return out;
    };
    AppendFencing fencing;
    for (const ShardLeaseRow& r : held) fencing.fences.push_back({r.shard, "inst-a", r.epoch});
    MaxSeqCache cache;
    auto first = messages.AppendFenced(batch("a"), cache, fencing);
    REQUIRE_MESSAGE(first.ok(), (first.ok() ? std::string() : first.error().message));
    CHECK((*first)[2].seq == 1);
    CHECK_FALSE(fencing.refused);
    // Shard 4 taken over: the whole batch rolls back, and the store names it.
    REQUIRE(leases.Acquire(4, held[1].version, "inst-b").ok());
    auto stale = messages.AppendFenced(batch("b"), cache, fencing);
    REQUIRE_FALSE(stale.ok());
    CHECK(stale.error().code == ErrorCode::kNotServing);
    REQUIRE(fencing.refused);
    CHECK(*fencing.refused == 4);
    for (int i = 0; i < 3; ++i) CHECK(messages.MaxSeq(conv + std::to_string(i)).value() == 1);
  }
}

}  // namespace seqd
