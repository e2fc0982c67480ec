// MysqlStore's allocation times (ReserveRequest::stamp_time): the table
// seqd_key_time beside Leaf's leaf_alloc (which stays as it is), one row
// per stamped key, written in the reservation's own transaction
// (mysql_reserve_many.cc) with the database's clock, so every instance of a
// cluster stamps by the same clock. GetAllocTimes falls back on the
// leaf_alloc row's update_time for a key never stamped.
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_store_sql.h"

namespace seqd {

const char* MysqlStore::KeyTimeTableSql() {
  // Keys compare byte for byte, as seqd_block_token's do.
  return "CREATE TABLE IF NOT EXISTS seqd_key_time ("
         "biz_tag VARBINARY(1020) NOT NULL, "
         "alloc_ms BIGINT NOT NULL, "
         "PRIMARY KEY (biz_tag)) ENGINE=InnoDB";
}

Result<std::vector<int64_t>> MysqlStore::GetAllocTimes(const std::vector<std::string>& keys) {
  return guard_.Read<std::vector<int64_t>>(
      *pool_, mysql_leaf::kSession, "get allocation times", keys,
      [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        // Each key's own row only: under a column that folds case or pads
        // spaces, a row of another key may have answered too.
        const std::map<std::string, int64_t> rows =
            mysql_leaf::ReadPairs(c, mysql_leaf::kRowTimesIn, keys);
        std::vector<std::string> tags;
        tags.reserve(rows.size());
        for (const auto& [tag, ms] : rows) tags.push_back(tag);
        const std::map<std::string, int64_t> stamps =
            tags.empty() ? std::map<std::string, int64_t>{}
                         : mysql_leaf::ReadPairs(c, mysql_leaf::kStampsIn, tags);
        std::vector<int64_t> out;
        out.reserve(keys.size());
        for (const std::string& k : keys) {
          auto row = rows.find(k);
          if (row == rows.end()) {
            out.push_back(-1);
            continue;
          }
          auto stamp = stamps.find(k);
          out.push_back(stamp == stamps.end() ? row->second : stamp->second);
        }
        return out;
      });
}

namespace mysql_leaf {

std::map<std::string, int64_t> ReadPairs(MysqlConn& c, int kind,
                                         const std::vector<std::string>& keys) {
  std::map<std::string, int64_t> found;
  for (size_t at = 0; at < keys.size(); at += kListMax) {
    const size_t n = std::min(kListMax, keys.size() - at);
    const size_t padded = PaddedCount(n);
    sql::PreparedStatement& st = c.List(kind, padded);
    for (size_t i = 0; i < padded; ++i) {
      st.setString(static_cast<unsigned>(1 + i), keys[at + std::min(i, n - 1)]);
    }
    std::unique_ptr<sql::ResultSet> rs(st.executeQuery());
    while (rs->next()) found[rs->getString(1).asStdString()] = rs->getInt64(2);
  }
  return found;
}

void StampTimes(MysqlConn& c, const std::vector<const std::string*>& tags) {
  for (size_t at = 0; at < tags.size(); at += kListMax) {
    const size_t n = std::min(kListMax, tags.size() - at);
    std::string sql = "INSERT INTO seqd_key_time (biz_tag, alloc_ms) VALUES ";
    for (size_t j = 0; j < n; ++j) {
      sql += j ? ",(" : "(";
      AppendUtf8Literal(sql, *tags[at + j]);
      sql += ", ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000))";
    }
    sql += " ON DUPLICATE KEY UPDATE alloc_ms = GREATEST(alloc_ms, VALUES(alloc_ms))";
    c.Update(sql);
  }
}

}  // namespace mysql_leaf
}  // namespace seqd
