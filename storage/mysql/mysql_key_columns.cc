#include "storage/mysql/mysql_key_columns.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <memory>
#include <string>

namespace seqd {

bool CollationIsExact(std::string_view data_type, std::string_view collation) {
  if (data_type == "varbinary") return true;
  return collation.ends_with("_nopad_bin") || collation == "utf8mb4_0900_bin";
}

bool KeyColumnIsExact(MysqlConn& c, std::string_view table, std::string_view column) {
  std::string sql =
      "SELECT DATA_TYPE, COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS "
      "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ";
  AppendUtf8Literal(sql, table);
  sql += " AND COLUMN_NAME = ";
  AppendUtf8Literal(sql, column);
  std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(sql));
  if (!rs->next()) return false;
  return CollationIsExact(rs->getString(1).asStdString(), rs->getString(2).asStdString());
}

}  // namespace seqd
