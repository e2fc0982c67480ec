// MysqlShardData (storage/mysql/mysql_shard_data.h), suite "mariadb": a
// shard's rows copied from one group's database to another's and deleted,
// with pages of 3 keys and 3 rows, so every table spans many pages. Two
// databases of the server under test (seqd_test_shard_a and _b) stand for
// two groups. Needs SEQD_TEST_MYSQL_URL; fails, not skips, without it.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "proto/shard_hash.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_shard_data.h"
#include "storage/mysql/mysql_store.h"
#include "tests/conformance/conformance_support.h"

namespace seqd {
namespace {

using namespace conformance;

constexpr uint32_t kShards = 4;
constexpr uint32_t kShard = 1;
constexpr MysqlShardDataOptions kSmallPages{3, 3};

// Each table with its key column and the columns compared (update_time,
// set by the server, is left out).
struct Compared {
  const char* table;
  const char* key;
  const char* columns;
};
constexpr Compared kCompared[] = {
    {"leaf_alloc", "biz_tag", "biz_tag, max_id, step, description"},
    {"seqd_block_token", "biz_tag", "biz_tag, token, first_id, last_id, created_ms"},
    {"seqd_key_time", "biz_tag", "biz_tag, alloc_ms"},
    {"seqd_min_seq", "biz_tag", "biz_tag, min_seq"},
    {"seqd_user_seq", "conv", "user_id, conv, min_seq, max_seq, read_seq"},
    {"seqd_conv", "conv_id", "conv_id, min_seq"},
    {"seqd_conv_member", "conv_id", "conv_id, user_id, min_seq, max_seq, read_seq"},
    {"seqd_message", "conv_id",
     "conv_id, seq, server_msg_id, sender_id, client_msg_id, content_type, payload, "
     "send_time_ms, status"},
};

// One group's database: made empty, its tables created by the stores.
struct Group {
  explicit Group(const std::string& name) {
    MysqlOptions o = TestMysqlOptions();
    auto admin = RawMysql(o);
    RawExec(*admin, "DROP DATABASE IF EXISTS " + name);
    RawExec(*admin, "CREATE DATABASE " + name);
    o.database = name;
    raw = RawMysql(o);
    pool = std::make_shared<MysqlPool>(o);
    REQUIRE_OK(MysqlStore(pool).EnsureSchema());
    REQUIRE_OK(MysqlMessageStore(pool).EnsureSchema());
  }
  MysqlShardData Data() const { return MysqlShardData(pool, &proto::ShardOfKey, kSmallPages); }
  // `c`'s rows of table `t`, each its compared columns joined by '|',
  // those of kShard only (mine) or of the other shards.
  std::multiset<std::string> Rows(const Compared& c, bool mine) const {
    std::multiset<std::string> out;
    std::unique_ptr<sql::Statement> st(raw->createStatement());
    std::unique_ptr<sql::ResultSet> rs(
        st->executeQuery(std::string("SELECT ") + c.key + ", " + c.columns + " FROM " + c.table));
    const unsigned n = rs->getMetaData()->getColumnCount();
    while (rs->next()) {
      if ((proto::ShardOfKey(rs->getString(1).asStdString(), kShards) == kShard) != mine) continue;
      std::string row;
      for (unsigned i = 2; i <= n; ++i) {
        row += rs->isNull(i) ? std::string("NULL") : rs->getString(i).asStdString();
        row += '|';
      }
      out.insert(row);
    }
    return out;
  }
  size_t Count(const Compared& c, bool mine) const { return Rows(c, mine).size(); }

  std::unique_ptr<sql::Connection> raw;
  std::shared_ptr<MysqlPool> pool;
};

// Rows of every table, for keys of every shard: 30 keys, 12 conversations
// with 5 members and 7 messages each, 5 users' seqs in each conversation.
void Fill(sql::Connection& c) {
  for (int i = 0; i < 30; ++i) {
    const std::string k = "'k" + std::to_string(i) + "'";
    const std::string n = std::to_string(i);
    RawExec(c, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (" + k + ", " +
                   std::to_string(100 + i) + ", 10, 'key " + n + "')");
    RawExec(c, "INSERT INTO seqd_key_time VALUES (" + k + ", " + n + ")");
    RawExec(c, "INSERT INTO seqd_min_seq VALUES (" + k + ", " + n + ")");
    for (int t = 0; t < 2; ++t) {
      RawExec(c, "INSERT INTO seqd_block_token VALUES (" + k + ", 'tok" + std::to_string(t) +
                     "', 1, 2, " + n + ")");
    }
  }
  for (int v = 0; v < 12; ++v) {
    const std::string conv = "'c" + std::to_string(v) + "'";
    RawExec(c, "INSERT INTO seqd_conv VALUES (" + conv + ", 1)");
    for (int u = 0; u < 5; ++u) {
      const std::string user = "'u" + std::to_string(u) + "'";
      RawExec(c, "INSERT INTO seqd_conv_member VALUES (" + conv + ", " + user + ", 1, NULL, " +
                     std::to_string(u) + ")");
      RawExec(c, "INSERT INTO seqd_user_seq VALUES (" + user + ", " + conv + ", 0, 0, " +
                     std::to_string(v) + ")");
    }
    for (int seq = 1; seq <= 7; ++seq) {
      const std::string s = std::to_string(seq);
      RawExec(c, "INSERT INTO seqd_message VALUES (" + conv + ", " + s + ", " +
                     std::to_string(v * 100 + seq) + ", 'alice', 'm" + s + "', 1, 'payload " + s +
                     "', 1700000000000, 0)");
    }
  }
}

}  // namespace

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: a shard copy pages through every table and copies the shard's rows only") {
    Group a("seqd_test_shard_a"), b("seqd_test_shard_b");
    Fill(*a.raw);
    // The target already holds one of the shard's keys with a larger max_id
    // (a copy never lowers it) and a key of another shard (left alone).
    std::string mine_key, other_key;
    for (int i = 0; i < 30 && (mine_key.empty() || other_key.empty()); ++i) {
      const std::string k = "k" + std::to_string(i);
      (proto::ShardOfKey(k, kShards) == kShard ? mine_key : other_key) = k;
    }
    RawExec(*b.raw, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('" +
                        mine_key + "', 5000, 10, NULL)");
    RawExec(*b.raw, "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('" +
                        other_key + "', 7, 10, NULL)");

    MysqlShardData from = a.Data(), to = b.Data();
    int64_t paced = 0;
    auto stats = from.CopyShard(kShard, kShards, to, /*delta=*/false, [&](int64_t rows) {
      paced += rows;
      return true;
    });
    REQUIRE_OK(stats);
    CHECK(paced == stats->rows);  // every batch written was reported
    for (const Compared& c : kCompared) {
      const std::string table = c.table;
      CAPTURE(table);
      const std::multiset<std::string> want = a.Rows(c, true);
      // The table spans several pages, and the shard's rows more than one.
      CHECK(want.size() + a.Count(c, false) > 3 * kSmallPages.rows_per_page);
      CHECK(want.size() >= 3);
      if (table == "leaf_alloc") {
        CHECK(b.Rows(c, true).size() == want.size());
        CHECK(b.Count(c, false) == 1);  // the other shard's key, untouched
        continue;
      }
      CHECK(b.Rows(c, true) == want);
      CHECK(b.Count(c, false) == 0);  // no row of another shard
    }
    // max_id: the larger of the two.
    std::unique_ptr<sql::Statement> st(b.raw->createStatement());
    std::unique_ptr<sql::ResultSet> rs(
        st->executeQuery("SELECT max_id FROM leaf_alloc WHERE biz_tag = '" + mine_key + "'"));
    REQUIRE(rs->next());
    CHECK(rs->getInt64(1) == 5000);

    // The delta: a new message and a recalled one in a conversation of the
    // shard, a changed member; copied again, the target matches.
    std::string conv;
    for (int v = 0; v < 12 && conv.empty(); ++v) {
      if (proto::ShardOfKey("c" + std::to_string(v), kShards) == kShard)
        conv = "c" + std::to_string(v);
    }
    REQUIRE_FALSE(conv.empty());
    RawExec(*a.raw, "INSERT INTO seqd_message VALUES ('" + conv +
                        "', 8, 9999, 'bob', 'm8', 1, 'late', 1700000000001, 0)");
    RawExec(*a.raw,
            "UPDATE seqd_message SET status = 1 WHERE conv_id = '" + conv + "' AND seq = 2");
    RawExec(*a.raw, "UPDATE seqd_user_seq SET read_seq = 99 WHERE conv = '" + conv + "'");
    REQUIRE_OK(from.CopyShard(kShard, kShards, to, /*delta=*/true, [](int64_t) { return true; }));
    for (const Compared& c : kCompared) {
      const std::string table = c.table;
      CAPTURE(table);
      if (table != "leaf_alloc") CHECK(b.Rows(c, true) == a.Rows(c, true));
    }

    // A stop asked between batches ends the copy.
    int batches = 0;
    auto stopped =
        from.CopyShard(kShard, kShards, to, false, [&](int64_t) { return ++batches < 2; });
    CHECK_ERR(stopped, ErrorCode::kShuttingDown);

    // Deleting the shard in the source: its rows go, every other row stays.
    std::map<std::string, size_t> others;
    for (const Compared& c : kCompared) others[c.table] = a.Count(c, false);
    auto deleted = from.DeleteShard(kShard, kShards, [](int64_t) { return true; });
    REQUIRE_OK(deleted);
    size_t had = 0;
    for (const Compared& c : kCompared) {
      const std::string table = c.table;
      CAPTURE(table);
      had += b.Count(c, true);
      CHECK(a.Count(c, true) == 0);
      CHECK(a.Count(c, false) == others[c.table]);
    }
    // leaf_alloc's target row count equals the source's: rows deleted = rows b holds.
    CHECK(*deleted == static_cast<int64_t>(had));
  }
}

}  // namespace seqd
