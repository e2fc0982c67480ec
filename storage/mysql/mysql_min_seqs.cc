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
#include <map>
#include <string>

#include "storage/keyed_values.h"
#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_store_sql.h"

namespace seqd {

using namespace mysql_leaf;  // NOLINT: this store's private header

Result<std::vector<int64_t>> MysqlStore::GetMaxIds(const std::vector<std::string>& keys) {
  return guard_.Read<std::vector<int64_t>>(
      *pool_, kSession, "get max ids", keys, [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        std::map<std::string, int64_t> reserved = ReadPairs(c, kMaxIdsIn, keys);
        for (auto& [tag, max_id] : reserved) --max_id;  // every ID below max_id was reserved
        // Exactly its own row: under a column that folds case or pads
        // spaces, a row of another key may have answered too.
        return ValuesInOrder(keys, reserved, 0);
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
  return guard_.Read<std::vector<int64_t>>(
      *pool_, kSession, "get min seqs", keys, [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        const std::map<std::string, int64_t> found = ReadPairs(c, kMinSeqsIn, keys);
        return ValuesInOrder(keys, found, 0);
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
      const size_t padded = PaddedCount(n);
      sql::PreparedStatement& st = c.List(kMinSeqsUpsert, padded);
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
