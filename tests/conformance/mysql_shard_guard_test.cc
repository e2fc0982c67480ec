// The store group guard on MariaDB (storage/mysql/mysql_shard_guard.h):
// the writes no lease fences (a message's status, a member, a read seq, a
// conversation's min seq, user seqs, a key's creation and step) commit in
// a group only while their shard's lease row there is unsealed, refused
// (kStoreUnavailable, nothing written, the placement told) once it is
// sealed, and again accepted once it is opened; a write behind a seal in
// flight waits for it and is refused, and a seal waits for a write in
// flight. Every read of a shard's rows (pulls, max seqs, members, min seqs,
// user seqs, keys and their listing) is answered the same way. Without
// store groups nothing is checked.
//
// Suite mariadb_galera (scripts/galera-test runs it, with a URL listing the
// nodes): writes through the second node race seals through the first;
// every write acknowledged must be in a read made through the first node
// right after its seal (as the move's delta copy reads), a seal that
// reports success must have sealed the row, and a read through the second
// node right after it must be refused.
#include <cppconn/connection.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "conformance_support.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_shard_lease_store.h"
#include "storage/mysql/mysql_store.h"
#include "storage/store_placement.h"

namespace seqd {
namespace {

using conformance::OnHost;
using conformance::RawExec;
using conformance::RawMysql;
using conformance::TestMysqlOptions;
using conformance::UniqueName;

constexpr uint32_t kShards = 16;

// The test's key hash: the number after a key's last '#' ("conv#3": 3).
uint32_t ShardAfterHash(std::string_view key, uint32_t shards) {
  uint32_t shard = 0;
  const size_t at = key.rfind('#');
  if (at != std::string_view::npos) {
    std::from_chars(key.data() + at + 1, key.data() + key.size(), shard);
  }
  return shard % shards;
}

std::string InShard(const std::string& base, uint32_t shard) {
  return UniqueName(base) + "#" + std::to_string(shard);
}

// The guard's pool of reads on `options`' database.
std::shared_ptr<MysqlPool> SnapshotPool(MysqlOptions options) {
  options.snapshot_reads = true;
  return std::make_shared<MysqlPool>(std::move(options));
}

// The stores of one group of two, fresh lease tables, the count of
// stale-view reports, and stores without the guard on the same database
// (what its rows hold).
struct GroupStores {
  GroupStores() : options(TestMysqlOptions()) {
    auto raw = RawMysql(options);
    for (const char* t : {"seqd_shard_lease", "seqd_cluster", "seqd_cluster_member"}) {
      RawExec(*raw, std::string("DROP TABLE IF EXISTS ") + t);
    }
    auto pool = std::make_shared<MysqlPool>(options);
    leases = std::make_unique<MysqlShardLeaseStore>(pool);
    REQUIRE(leases->EnsureSchema(kShards).ok());
    placement =
        std::make_shared<StorePlacement>(std::vector<std::string>{"home", "b"}, &ShardAfterHash);
    placement->SetShards(kShards);
    placement->SetStaleHook([this](StaleAccess access) {
      ++(access == StaleAccess::kRead ? stale_reads : stale_reports);
    });
    const MysqlShardGuard guard(placement, 0, SnapshotPool(options));
    ids = std::make_unique<MysqlStore>(pool, guard);
    messages = std::make_unique<MysqlMessageStore>(pool, guard);
    REQUIRE_OK(ids->EnsureSchema());
    REQUIRE_OK(messages->EnsureSchema());
    rows_ids = std::make_unique<MysqlStore>(pool);
    rows_messages = std::make_unique<MysqlMessageStore>(pool);
  }

  // `conv` with `n` messages.
  void Fill(const std::string& conv, int n) {
    std::vector<AppendRequest> batch;
    for (int i = 0; i < n; ++i) {
      AppendRequest r;
      r.conv_id = conv;
      r.sender_id = "s";
      r.client_msg_id = conformance::Num("c", i);
      r.payload = "p";
      r.server_msg_id = next_msg_id++;
      batch.push_back(r);
    }
    MaxSeqCache cache;
    REQUIRE_OK(messages->Append(batch, cache));
  }

  MysqlOptions options;
  std::unique_ptr<MysqlShardLeaseStore> leases;
  std::shared_ptr<StorePlacement> placement;
  std::atomic<int> stale_reports{0};  // by writes
  std::atomic<int> stale_reads{0};
  std::unique_ptr<MysqlStore> ids;
  std::unique_ptr<MysqlMessageStore> messages;
  std::unique_ptr<MysqlStore> rows_ids;
  std::unique_ptr<MysqlMessageStore> rows_messages;
  int64_t next_msg_id = 1;
};

// Every unfenced write of `conv` (with 5 messages, member "m" at read seq
// 1), of `key` (a key row of step 10) and `new_key` (none): all succeed,
// or all fail with `want`.
void CheckWrites(MessageStore& messages, SegmentStore& ids, const std::string& conv,
                 const std::string& key, const std::string& new_key,
                 std::optional<ErrorCode> want) {
  auto expect = [&](const auto& result, const char* what) {
    INFO(what);
    if (want) {
      CHECK_ERR(result, *want);
    } else {
      CHECK_MESSAGE(result.ok(), what, " -> ", conformance::Describe(result));
    }
  };
  expect(messages.SetStatus(conv, 2, MessageStatus::kRecalled), "SetStatus");
  expect(messages.PutMember(conv, "n", MemberState{1, std::nullopt, 0}), "PutMember");
  expect(messages.SetReadSeq(conv, "m", 3, 5), "SetReadSeq");
  expect(messages.SetConvMinSeq(conv, 2), "SetConvMinSeq");
  expect(ids.SetUserSeqs("u", UserSeqField::kRead, false, {UserSeqValue{conv, 4}}), "SetUserSeqs");
  expect(ids.SetStep(key, 20), "SetStep");
  expect(ids.CreateKey(new_key, 10, ""), "CreateKey");
}

constexpr int kReadKinds = 13;

// Every read of `conv` (with 5 messages, member "m") and `key`: all
// succeed, or all fail with `want`. Returns how many were made.
int CheckReads(MessageStore& messages, SegmentStore& ids, const std::string& conv,
               const std::string& key, std::optional<ErrorCode> want) {
  int made = 0;
  auto expect = [&](const auto& result, const char* what) {
    INFO(what);
    ++made;
    if (want) {
      CHECK_ERR(result, *want);
    } else {
      CHECK_MESSAGE(result.ok(), what, " -> ", conformance::Describe(result));
    }
  };
  const std::vector<std::string> convs{conv};
  const std::vector<std::string> keys{key};
  RangeQuery range;
  range.conv_id = conv;
  range.from_seq = 1;
  range.to_seq = 5;
  range.limit = 10;
  expect(messages.MaxSeq(conv), "MaxSeq");
  expect(messages.MaxSeqs(convs), "MaxSeqs");
  expect(messages.GetRange(range), "GetRange");
  expect(messages.GetBySeqs(conv, std::vector<int64_t>{1, 2}), "GetBySeqs");
  expect(messages.GetConvMinSeq(conv), "GetConvMinSeq");
  expect(messages.GetMember(conv, "m"), "GetMember");
  expect(messages.CountUnread(conv, "m", 0, 5), "CountUnread");
  expect(ids.GetKey(key), "GetKey");
  expect(ids.GetMaxIds(keys), "GetMaxIds");
  expect(ids.GetAllocTimes(keys), "GetAllocTimes");
  expect(ids.GetMinSeqs(keys), "GetMinSeqs");
  expect(ids.GetUserSeqs("u", UserSeqField::kRead, convs), "GetUserSeqs");
  // The listing's page holds `key` alone: its name less its last character
  // sorts just before it, and no other key starts that way.
  expect(ids.ListKeys(key.substr(0, key.size() - 1), 1), "ListKeys");
  return made;
}

// The member ids of `conv` as a new transaction on `node` reads them,
// after the node applied everything committed before (wsrep_sync_wait).
std::set<std::string> MembersRead(const MysqlOptions& node, const std::string& conv) {
  auto c = RawMysql(node);
  RawExec(*c, "SET SESSION wsrep_sync_wait = 1");
  std::unique_ptr<sql::Statement> st(c->createStatement());
  std::unique_ptr<sql::ResultSet> rs(
      st->executeQuery("SELECT user_id FROM seqd_conv_member WHERE conv_id = '" + conv + "'"));
  std::set<std::string> out;
  while (rs->next()) out.insert(rs->getString(1).asStdString());
  return out;
}

// Seal(shard) through `leases` until it succeeds (conflicting commits of
// the other node make it fail for a while); false after 20 s.
bool SealRetrying(ShardLeaseStore& leases, uint32_t shard) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    if (leases.Seal(shard).ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace

TEST_SUITE("mariadb_galera") {
  TEST_CASE("galera: writes racing a seal on another node are in the read after it") {
    const MysqlOptions all = TestMysqlOptions();
    const MysqlOptions first = OnHost(all, 0);
    MysqlOptions second = OnHost(all, 1);
    second.pool_size = 2;
    auto raw = RawMysql(first);
    for (const char* t : {"seqd_shard_lease", "seqd_cluster", "seqd_cluster_member"}) {
      RawExec(*raw, std::string("DROP TABLE IF EXISTS ") + t);
    }
    MysqlShardLeaseStore leases(std::make_shared<MysqlPool>(first));
    REQUIRE(leases.EnsureSchema(kShards).ok());
    auto placement =
        std::make_shared<StorePlacement>(std::vector<std::string>{"home", "b"}, &ShardAfterHash);
    placement->SetShards(kShards);
    MysqlMessageStore writer(std::make_shared<MysqlPool>(second),
                             MysqlShardGuard(placement, 0, SnapshotPool(second)));
    REQUIRE_OK(writer.EnsureSchema());
    int lost = 0, acked_total = 0;
    for (uint32_t shard = 1; shard < kShards; ++shard) {
      const std::string conv = InShard("grace", shard);
      std::atomic<bool> stop{false};
      std::atomic<int> next{0};
      std::mutex mu;
      std::set<std::string> acked;
      std::vector<std::thread> writers;
      for (int t = 0; t < 2; ++t) {
        writers.emplace_back([&] {
          while (!stop) {
            const std::string user = conformance::Num("u", next++);
            if (writer.PutMember(conv, user, MemberState{1, std::nullopt, 0}).ok()) {
              std::lock_guard<std::mutex> lock(mu);
              acked.insert(user);
            }
          }
        });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const bool sealed = SealRetrying(leases, shard);
      const std::set<std::string> copied = MembersRead(first, conv);
      // The other node's reads see the seal (wsrep_sync_wait).
      CHECK_ERR(writer.MaxSeq(conv), ErrorCode::kStoreUnavailable);
      const int64_t epoch = leases.SealedEpoch(shard).value();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // writes after the seal too
      stop = true;
      for (auto& w : writers) w.join();
      REQUIRE(sealed);
      CHECK_MESSAGE(epoch >= 0, "shard ", shard, ": the seal reported success, the row is open");
      for (const std::string& user : acked) lost += copied.count(user) == 0 ? 1 : 0;
      acked_total += static_cast<int>(acked.size());
    }
    MESSAGE(acked_total << " writes acknowledged over " << kShards - 1 << " seals, " << lost
                        << " missing from the read after their seal");
    CHECK(lost == 0);
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: store groups: unfenced writes commit only while their shard is unsealed") {
    GroupStores g;
    const std::string conv = InShard("gconv", 3);
    const std::string key = InShard("gkey", 3);
    g.Fill(conv, 5);
    REQUIRE_OK(g.messages->PutMember(conv, "m", MemberState{1, std::nullopt, 1}));
    REQUIRE_OK(g.ids->CreateKey(key, 10, ""));

    // Sealed (its rows are leaving this group): every write refused, retryable,
    // nothing written, and the placement told each time.
    const std::string new_key = InShard("gnew", 3);
    REQUIRE(g.leases->Seal(3).ok());
    CheckWrites(*g.messages, *g.ids, conv, key, new_key, ErrorCode::kStoreUnavailable);
    CHECK(g.stale_reports == 7);
    CHECK(g.stale_reads == 0);
    MessageStore& rows = *g.rows_messages;
    CHECK(rows.GetBySeqs(conv, std::vector<int64_t>{2}).value().at(0).status ==
          MessageStatus::kNormal);
    CHECK_FALSE(rows.GetMember(conv, "n").value().has_value());
    CHECK(rows.GetMember(conv, "m").value()->read_seq == 1);
    CHECK(rows.GetConvMinSeq(conv).value() == 1);
    CHECK(g.rows_ids->GetUserSeqs("u", UserSeqField::kRead, {conv}).value() ==
          std::vector<int64_t>{0});
    CHECK(g.rows_ids->GetKey(key).value().step == 10);
    CHECK_ERR(g.rows_ids->GetKey(new_key), ErrorCode::kUnknownKey);
    // Every read is refused too, retryable, and the placement told each
    // time: this group's rows of the shard are as the seal left them.
    CHECK(CheckReads(*g.messages, *g.ids, conv, key, ErrorCode::kStoreUnavailable) == kReadKinds);
    CHECK(g.stale_reads == kReadKinds);
    // So is a read's answer of "none" (no such key) the old rows would give.
    CHECK_ERR(g.ids->GetKey(new_key), ErrorCode::kStoreUnavailable);
    // A listing checks only the keys the view puts in this group: with the
    // shard placed in "b", its rows left here are not this group's to
    // answer for (the grouped store drops them).
    PlacementMap moved;
    moved.version = 1;
    moved.rows.push_back(PlacementRow{3, "b", "", ""});
    REQUIRE_OK(g.placement->Apply(moved));
    REQUIRE_OK(g.ids->ListKeys(key.substr(0, key.size() - 1), 1));
    REQUIRE_OK(g.placement->Apply(PlacementMap{2, {}}));
    // A refusal the old rows would make (no such member, no such message,
    // no such key) is not answered from them: retry instead.
    CHECK_ERR(g.messages->SetReadSeq(conv, "nobody", 1, 5), ErrorCode::kStoreUnavailable);
    CHECK_ERR(g.messages->SetStatus(conv, 99, MessageStatus::kDeleted),
              ErrorCode::kStoreUnavailable);
    CHECK_ERR(g.ids->SetStep(InShard("gnone", 3), 5), ErrorCode::kStoreUnavailable);
    // A batch with a key of an unsealed shard too: all of it refused.
    const std::string other = InShard("gother", 4);
    CHECK_ERR(g.ids->SetUserSeqs("u", UserSeqField::kRead, false,
                                 {UserSeqValue{other, 7}, UserSeqValue{conv, 4}}),
              ErrorCode::kStoreUnavailable);
    CHECK(g.ids->GetUserSeqs("u", UserSeqField::kRead, {other}).value() == std::vector<int64_t>{0});
    // So is a read of both.
    CHECK_ERR(g.ids->GetUserSeqs("u", UserSeqField::kRead, {other, conv}),
              ErrorCode::kStoreUnavailable);
    // Another shard's reads and writes go on.
    REQUIRE_OK(g.ids->SetUserSeqs("u", UserSeqField::kRead, false, {UserSeqValue{other, 7}}));

    // Opened again (a move back): the writes commit.
    auto epoch = g.leases->SealedEpoch(3);
    REQUIRE(epoch.ok());
    REQUIRE(g.leases->Open(3, *epoch + 1).ok());
    const int reports = g.stale_reports;
    const int read_reports = g.stale_reads;
    CheckReads(*g.messages, *g.ids, conv, key, std::nullopt);
    CheckWrites(*g.messages, *g.ids, conv, key, new_key, std::nullopt);
    CHECK(g.stale_reports == reports);
    CHECK(g.stale_reads == read_reports);
    CHECK(g.messages->GetMember(conv, "m").value()->read_seq == 3);
    CHECK(g.ids->GetUserSeqs("u", UserSeqField::kRead, {conv}).value() == std::vector<int64_t>{4});
  }

  TEST_CASE("mariadb: store groups: nothing is read or written before the shard count is known") {
    GroupStores g;
    auto unread =
        std::make_shared<StorePlacement>(std::vector<std::string>{"home", "b"}, &ShardAfterHash);
    MysqlMessageStore messages(std::make_shared<MysqlPool>(g.options), MysqlShardGuard(unread));
    const std::string conv = InShard("gearly", 2);
    CHECK_ERR(messages.SetConvMinSeq(conv, 7), ErrorCode::kStoreUnavailable);
    CHECK_ERR(messages.GetConvMinSeq(conv), ErrorCode::kStoreUnavailable);
    CHECK(g.rows_messages->GetConvMinSeq(conv).value() == 1);
  }

  TEST_CASE("mariadb: without store groups a sealed row stops no write") {
    GroupStores g;
    const std::string conv = InShard("gsingle", 6);
    const std::string key = InShard("gsinglekey", 6);
    g.Fill(conv, 5);
    MysqlMessageStore messages(std::make_shared<MysqlPool>(g.options));
    MysqlStore ids(std::make_shared<MysqlPool>(g.options));
    REQUIRE_OK(messages.PutMember(conv, "m", MemberState{1, std::nullopt, 1}));
    REQUIRE_OK(ids.CreateKey(key, 10, ""));
    REQUIRE(g.leases->Seal(6).ok());
    CheckWrites(messages, ids, conv, key, InShard("gsinglenew", 6), std::nullopt);
    CheckReads(messages, ids, conv, key, std::nullopt);
    CHECK(g.stale_reports == 0);
    CHECK(g.stale_reads == 0);
  }

  TEST_CASE("mariadb: store groups: a write behind a seal in flight waits and is refused") {
    GroupStores g;
    const std::string conv = InShard("gwait", 5);
    g.Fill(conv, 3);
    // A seal in flight: its row locked exclusively, sealed, not committed.
    auto sealer = RawMysql(g.options);
    RawExec(*sealer, "START TRANSACTION");
    RawExec(*sealer,
            "UPDATE seqd_shard_lease SET owner = '', epoch = epoch + 1, version = version + 1, "
            "sealed = 1 WHERE shard = 5");
    std::atomic<bool> done{false};
    Status put = OkStatus();
    std::thread writer([&] {
      put = g.messages->PutMember(conv, "w", MemberState{1, std::nullopt, 0});
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(done.load());  // waits for the seal
    RawExec(*sealer, "COMMIT");
    writer.join();
    CHECK_ERR(put, ErrorCode::kStoreUnavailable);
    CHECK_FALSE(g.rows_messages->GetMember(conv, "w").value().has_value());
  }

  TEST_CASE("mariadb: store groups: a read made while sealed is refused though opened since") {
    // A move out and back between a read's statement and its check: the
    // statement read this group while the shard lived elsewhere, and the
    // row is open again when the check reads it. The check reads the
    // read's own snapshot, in which the row was sealed.
    GroupStores g;
    const MysqlSession session{};
    auto pool = std::make_shared<MysqlPool>(g.options);
    const std::string conv = InShard("gaba", 7);
    REQUIRE(g.leases->Seal(7).ok());
    auto read_across_a_reopening = [&](const MysqlShardGuard& guard) {
      bool reopened = false;
      return guard.Read<int64_t>(
          *pool, session, "aba read", conv, [&](MysqlConn& c) -> Result<int64_t> {
            std::unique_ptr<sql::ResultSet> rs(
                c.Plain().executeQuery("SELECT COUNT(*) FROM seqd_shard_lease"));
            // The move back opens the row, unless a
            // retry of this read already did.
            if (!reopened) {
              const int64_t epoch = g.leases->SealedEpoch(7).value();
              REQUIRE(g.leases->Open(7, epoch + 1).ok());
              reopened = true;
            }
            return rs->next() ? rs->getInt64(1) : 0;
          });
    };
    CHECK_ERR(read_across_a_reopening(MysqlShardGuard(g.placement, 0, SnapshotPool(g.options))),
              ErrorCode::kStoreUnavailable);
    // What the snapshot is for: checked in a statement of its own (READ
    // COMMITTED), the same read passes.
    REQUIRE(g.leases->Seal(7).ok());
    CHECK_MESSAGE(read_across_a_reopening(MysqlShardGuard(g.placement, 0)).ok(),
                  "a check outside the read's snapshot was expected to miss the seal");
  }

  TEST_CASE("mariadb: store groups: a seal waits for a write that read the row unsealed") {
    GroupStores g;
    // A write in flight: the row read in share mode, as the guard leaves it
    // until the write's COMMIT.
    auto write = RawMysql(g.options);
    RawExec(*write, "START TRANSACTION");
    {
      std::unique_ptr<sql::Statement> st(write->createStatement());
      std::unique_ptr<sql::ResultSet> rs(st->executeQuery(
          "SELECT sealed FROM seqd_shard_lease WHERE shard = 9 LOCK IN SHARE MODE"));
      REQUIRE(rs->next());
      CHECK(rs->getInt(1) == 0);
      CHECK_FALSE(rs->next());
    }
    std::atomic<bool> sealed{false};
    std::thread seal([&] {
      CHECK(g.leases->Seal(9).ok());
      sealed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(sealed.load());  // the write commits first
    RawExec(*write, "COMMIT");
    seal.join();
    CHECK(g.leases->SealedEpoch(9).value() >= 0);
  }
}

}  // namespace seqd
