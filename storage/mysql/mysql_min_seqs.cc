// MysqlStore's reads and writes for OpenIM: the max IDs of many
// keys in IN lists, and the min seqs: the table seqd_min_seq beside Leaf's
// leaf_alloc (which stays as it is), read by IN lists and written by one
// multi-row upsert per 1024 keys in one transaction, fenced in cluster mode
// as a reservation is (the lease rows written last, just before COMMIT).
// A COMMIT whose outcome is unknown is run again by the pool: setting the
// same values twice is harmless.
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
#include <bit>
#include <map>
#include <string>

#include "storage/mysql/mysql_store.h"

namespace seqd {
namespace {

enum StmtId { kFence, kNumStmts };

const char* const kSql[kNumStmts] = {
    /* kFence */
    ("UPDATE seqd_shard_lease SET fences = fences + 1 "
     "WHERE shard = ? AND owner = ? AND owner <> '' AND epoch = ?"),
};

enum ListKind { kSelectIn, kUpsert, kMaxIdsIn };

std::string ListSql(int kind, size_t n) {
  switch (static_cast<ListKind>(kind)) {
    case kSelectIn:
      return "SELECT biz_tag, min_seq FROM seqd_min_seq WHERE biz_tag IN (" + RepeatSql("?", n) +
             ")";
    case kMaxIdsIn:
      return "SELECT biz_tag, max_id FROM leaf_alloc WHERE biz_tag IN (" + RepeatSql("?", n) + ")";
    case kUpsert:
      return "INSERT INTO seqd_min_seq (biz_tag, min_seq) VALUES " + RepeatSql("(?,?)", n) +
             " ON DUPLICATE KEY UPDATE min_seq = VALUES(min_seq)";
  }
  return {};
}

// Items per list statement at most; counts are padded to a power of two
// (the last item repeated) so each connection prepares a handful.
constexpr size_t kListMax = 1024;

const MysqlSession kSession{kSql, ListSql, std::nullopt};

}  // namespace

Result<std::vector<int64_t>> MysqlStore::GetMaxIds(const std::vector<std::string>& keys) {
  return pool_->Run<std::vector<int64_t>>(
      kSession, "get max ids", [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        std::map<std::string, int64_t, std::less<>> found;
        for (size_t at = 0; at < keys.size(); at += kListMax) {
          const size_t n = std::min(kListMax, keys.size() - at);
          const size_t padded = std::bit_ceil(n);
          sql::PreparedStatement& st = c.List(kMaxIdsIn, padded);
          for (size_t i = 0; i < padded; ++i) {
            st.setString(static_cast<unsigned>(1 + i), keys[at + std::min(i, n - 1)]);
          }
          std::unique_ptr<sql::ResultSet> rs(st.executeQuery());
          while (rs->next()) found[rs->getString(1).asStdString()] = rs->getInt64(2);
        }
        c.Commit();  // ends the read's transaction
        std::vector<int64_t> out;
        out.reserve(keys.size());
        for (const std::string& k : keys) {
          // Exactly its own row: under a column that folds case or pads
          // spaces, a row of another key may have answered too.
          auto it = found.find(k);
          out.push_back(it == found.end() ? 0 : it->second - 1);
        }
        return out;
      });
}

const char* MysqlStore::MinSeqTableSql() {
  // Keys compare byte for byte: "A" and "a", "a" and "a " are two keys.
  return "CREATE TABLE IF NOT EXISTS seqd_min_seq ("
         "biz_tag VARBINARY(255) NOT NULL, "
         "min_seq BIGINT NOT NULL, "
         "PRIMARY KEY (biz_tag)) ENGINE=InnoDB";
}

const char* MysqlStore::MinSeqTableUpgradeSql() {
  // An older seqd's VARCHAR(128) ascii_bin: the same bytes, made exact.
  return "ALTER TABLE seqd_min_seq MODIFY biz_tag VARBINARY(255) NOT NULL";
}

Result<std::vector<int64_t>> MysqlStore::GetMinSeqs(const std::vector<std::string>& keys) {
  return pool_->Run<std::vector<int64_t>>(
      kSession, "get min seqs", [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        std::map<std::string, int64_t, std::less<>> found;
        for (size_t at = 0; at < keys.size(); at += kListMax) {
          const size_t n = std::min(kListMax, keys.size() - at);
          const size_t padded = std::bit_ceil(n);
          sql::PreparedStatement& st = c.List(kSelectIn, padded);
          for (size_t i = 0; i < padded; ++i) {
            st.setString(static_cast<unsigned>(1 + i), keys[at + std::min(i, n - 1)]);
          }
          std::unique_ptr<sql::ResultSet> rs(st.executeQuery());
          while (rs->next()) found[rs->getString(1).asStdString()] = rs->getInt64(2);
        }
        c.Commit();  // ends the read's transaction
        std::vector<int64_t> out;
        out.reserve(keys.size());
        for (const std::string& k : keys) {
          auto it = found.find(k);
          out.push_back(it == found.end() ? 0 : it->second);
        }
        return out;
      });
}

Status MysqlStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                              const std::vector<ShardFence>& fences, uint32_t* refused_shard) {
  if (values.empty()) return OkStatus();
  // Lease rows in shard order: two writers never wait for each other's.
  std::vector<ShardFence> ordered = fences;
  std::sort(ordered.begin(), ordered.end(),
            [](const ShardFence& a, const ShardFence& b) { return a.shard < b.shard; });
  Result<Ok> r = pool_->Run<Ok>(kSession, "set min seqs", [&](MysqlConn& c) -> Result<Ok> {
    for (size_t at = 0; at < values.size(); at += kListMax) {
      const size_t n = std::min(kListMax, values.size() - at);
      const size_t padded = std::bit_ceil(n);
      sql::PreparedStatement& st = c.List(kUpsert, padded);
      for (size_t i = 0; i < padded; ++i) {
        const MinSeqValue& v = values[at + std::min(i, n - 1)];
        st.setString(static_cast<unsigned>(1 + 2 * i), v.key);
        st.setInt64(static_cast<unsigned>(2 + 2 * i), v.min_seq);
      }
      st.executeUpdate();
    }
    // Last, just before COMMIT (see ReserveImpl): a lease moved meanwhile
    // matches no row, and nothing is written.
    for (const ShardFence& f : ordered) {
      if (c.Execute(kFence, static_cast<int>(f.shard), f.owner, f.epoch) == 0) {
        if (refused_shard) *refused_shard = f.shard;
        return MakeError(ErrorCode::kNotServing, "shard " + std::to_string(f.shard) +
                                                     " is no longer held by this instance");
      }
    }
    c.Commit();
    return Ok{};
  });
  if (!r) return r.error();
  return OkStatus();
}

}  // namespace seqd
