// MysqlStore's block tokens (ReserveRequest::token): the table
// seqd_block_token beside Leaf's leaf_alloc (which stays as it is). Rows are
// written in the reservation's own transaction (mysql_reserve_many.cc) and
// forgotten by PruneBlockTokens.
#include <cppconn/prepared_statement.h>

#include <memory>
#include <string>

#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_store_sql.h"

namespace seqd {

const char* MysqlStore::BlockTokenTableSql() {
  // Keys and tokens compare byte for byte: "A" and "a" are two keys, and a
  // trailing space counts (utf8mb4_bin with VARCHAR pads spaces, so the
  // key is stored as binary text).
  return "CREATE TABLE IF NOT EXISTS seqd_block_token ("
         "biz_tag VARBINARY(1020) NOT NULL, "
         "token VARBINARY(64) NOT NULL, "
         "first_id BIGINT NOT NULL, "
         "last_id BIGINT NOT NULL, "
         "created_ms BIGINT NOT NULL, "
         "PRIMARY KEY (biz_tag, token), "
         "KEY created (created_ms)) ENGINE=InnoDB";
}

Result<int64_t> MysqlStore::PruneBlockTokens(int64_t before_unix_ms) {
  return pool_->Run<int64_t>(
      mysql_leaf::kSession, "prune tokens", [&](MysqlConn& c) -> Result<int64_t> {
        const int pruned = c.Update("DELETE FROM seqd_block_token WHERE created_ms < " +
                                    std::to_string(before_unix_ms));
        c.Commit();
        return static_cast<int64_t>(pruned);
      });
}

}  // namespace seqd
