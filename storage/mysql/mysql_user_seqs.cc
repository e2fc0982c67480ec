// MysqlStore's user seqs (OpenIM's SeqUser): the table seqd_user_seq beside
// Leaf's leaf_alloc (which stays as it is), one row per (user,
// conversation) with its min, max and read seq. Reads are one IN list per
// kListMax conversations; a set is one multi-row upsert per kListMax of
// them, all in one transaction (with store groups, checked by the guard
// before its COMMIT: MysqlShardGuard). User ids and conversations compare
// byte for byte. A COMMIT whose outcome is unknown is run again by the pool:
// setting the same values twice is harmless, and a raise is a raise.
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/keyed_values.h"
#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_store_sql.h"

namespace seqd {
namespace {

// The column of `field`: a fixed name, never from input.
const char* Column(UserSeqField field) {
  switch (field) {
    case UserSeqField::kMin:
      return "min_seq";
    case UserSeqField::kMax:
      return "max_seq";
    case UserSeqField::kRead:
      return "read_seq";
  }
  return "read_seq";
}

}  // namespace

const char* MysqlStore::UserSeqTableSql() {
  return "CREATE TABLE IF NOT EXISTS seqd_user_seq ("
         "user_id VARBINARY(1020) NOT NULL, "
         "conv VARBINARY(1020) NOT NULL, "
         "min_seq BIGINT NOT NULL DEFAULT 0, "
         "max_seq BIGINT NOT NULL DEFAULT 0, "
         "read_seq BIGINT NOT NULL DEFAULT 0, "
         "PRIMARY KEY (user_id, conv)) ENGINE=InnoDB";
}

Result<std::vector<int64_t>> MysqlStore::GetUserSeqs(std::string_view user, UserSeqField field,
                                                     const std::vector<std::string>& convs) {
  return guard_.Read<std::vector<int64_t>>(
      *pool_, mysql_leaf::kSession, "get user seqs", convs,
      [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
        std::map<std::string, int64_t> found;
        for (size_t at = 0; at < convs.size(); at += mysql_leaf::kListMax) {
          const size_t n = std::min(mysql_leaf::kListMax, convs.size() - at);
          std::string sql = std::string("SELECT conv, ") + Column(field) +
                            " FROM seqd_user_seq WHERE user_id = ";
          AppendUtf8Literal(sql, user);
          sql += " AND conv IN (";
          for (size_t j = 0; j < n; ++j) {
            if (j) sql += ',';
            AppendUtf8Literal(sql, convs[at + j]);
          }
          sql += ')';
          std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(sql));
          while (rs->next()) found[rs->getString(1).asStdString()] = rs->getInt64(2);
        }
        return ValuesInOrder(convs, found, 0);
      });
}

Status MysqlStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                               const std::vector<UserSeqValue>& values) {
  if (values.empty()) return OkStatus();
  // In conversation order: two sets of one user lock their rows alike.
  std::vector<const UserSeqValue*> sorted;
  sorted.reserve(values.size());
  for (const UserSeqValue& v : values) sorted.push_back(&v);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->conv < b->conv; });
  const std::string column = Column(field);
  Result<Ok> r =
      pool_->Run<Ok>(mysql_leaf::kSession, "set user seqs", [&](MysqlConn& c) -> Result<Ok> {
        for (size_t at = 0; at < sorted.size(); at += mysql_leaf::kListMax) {
          const size_t n = std::min(mysql_leaf::kListMax, sorted.size() - at);
          std::string sql = "INSERT INTO seqd_user_seq (user_id, conv, " + column + ") VALUES ";
          for (size_t j = 0; j < n; ++j) {
            sql += j ? ",(" : "(";
            AppendUtf8Literal(sql, user);
            sql += ',';
            AppendUtf8Literal(sql, sorted[at + j]->conv);
            sql += ',' + std::to_string(sorted[at + j]->seq) + ')';
          }
          sql += " ON DUPLICATE KEY UPDATE " + column + " = ";
          sql += raise_only ? "GREATEST(" + column + ", VALUES(" + column + "))"
                            : "VALUES(" + column + ")";
          c.Update(sql);
        }
        std::vector<std::string_view> convs;
        convs.reserve(sorted.size());
        for (const UserSeqValue* v : sorted) convs.push_back(v->conv);
        if (auto refused = guard_.Admit(c, convs)) return *refused;
        c.Commit();
        return Ok{};
      });
  if (!r) return r.error();
  return OkStatus();
}

}  // namespace seqd
