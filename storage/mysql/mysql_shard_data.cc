#include "storage/mysql/mysql_shard_data.h"

#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>

#include <memory>
#include <string>
#include <vector>

namespace seqd {

// A table whose rows belong to the key in column `key`; `page`: a second
// primary-key column to read a key's rows by, in pages (null: all of a
// key's rows at once, for tables with few rows per key).
struct MysqlShardData::Table {
  const char* name;
  const char* key;
  const char* page;
  bool keep_max_id;  // leaf_alloc: max_id never lowered by a copy
};

namespace {

constexpr MysqlShardData::Pace::result_type kGoOn = true;
constexpr int64_t kPageRows = 1000;
constexpr int64_t kDeleteRows = 5000;

const char* const kSql[] = {"SELECT 1"};
const MysqlSession kSession{kSql, nullptr, std::nullopt};

// A page of rows, each rendered as "(v1,v2,...)" for an INSERT.
struct Page {
  std::vector<std::string> columns;
  std::vector<std::string> rows;
  int64_t last = 0;  // the page column's value in the last row
};

bool Numeric(int type) {
  switch (type) {
    case sql::DataType::BIT:
    case sql::DataType::TINYINT:
    case sql::DataType::SMALLINT:
    case sql::DataType::MEDIUMINT:
    case sql::DataType::INTEGER:
    case sql::DataType::BIGINT:
    case sql::DataType::REAL:
    case sql::DataType::DOUBLE:
    case sql::DataType::DECIMAL:
    case sql::DataType::NUMERIC:
      return true;
    default:
      return false;
  }
}

// A number as the server printed it: digits, sign, point and exponent only.
bool NumberText(const std::string& text) {
  if (text.empty()) return false;
  for (char ch : text) {
    if (!((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' ||
          ch == 'E')) {
      return false;
    }
  }
  return true;
}

std::string Hex(std::string_view bytes) {
  std::string out;
  AppendHexLiteral(out, bytes);
  return out;
}

// Runs `query` on `pool` and renders its rows; `page_column` names the
// column whose last value is kept (may be null).
Result<Page> Select(MysqlPool& pool, const std::string& query, const char* page_column) {
  return pool.Run<Page>(kSession, "read shard rows", [&](MysqlConn& c) -> Result<Page> {
    Page page;
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(query));
    sql::ResultSetMetaData* meta = rs->getMetaData();
    const unsigned n = meta->getColumnCount();
    std::vector<bool> numeric(n);
    unsigned page_index = 0;
    for (unsigned i = 1; i <= n; ++i) {
      page.columns.push_back(meta->getColumnLabel(i).asStdString());
      numeric[i - 1] = Numeric(meta->getColumnType(i));
      if (page_column != nullptr && page.columns.back() == page_column) page_index = i;
    }
    while (rs->next()) {
      std::string row = "(";
      for (unsigned i = 1; i <= n; ++i) {
        if (i > 1) row += ',';
        if (rs->isNull(i)) {
          row += "NULL";
          continue;
        }
        const std::string value = rs->getString(i).asStdString();
        row += numeric[i - 1] && NumberText(value) ? value : Hex(value);
      }
      row += ')';
      page.rows.push_back(std::move(row));
      if (page_index > 0) page.last = rs->getInt64(page_index);
    }
    c.Commit();  // the next read sees what committed since
    return page;
  });
}

constexpr MysqlShardData::Table kTables[] = {
    {"leaf_alloc", "biz_tag", nullptr, true},
    {"seqd_block_token", "biz_tag", nullptr, false},
    {"seqd_key_time", "biz_tag", nullptr, false},
    {"seqd_min_seq", "biz_tag", nullptr, false},
    {"seqd_user_seq", "conv", nullptr, false},
    {"seqd_conv", "conv_id", nullptr, false},
    {"seqd_conv_member", "conv_id", nullptr, false},
    {"seqd_message", "conv_id", "seq", false},
};

}  // namespace

Result<std::vector<std::string>> MysqlShardData::KeysOf(const Table& table, uint32_t shard,
                                                        uint32_t shards, ShardCopyStats& stats) {
  ++stats.statements;
  auto keys = pool_->Run<std::vector<std::string>>(
      kSession, "list shard keys", [&](MysqlConn& c) -> Result<std::vector<std::string>> {
        std::vector<std::string> out;
        std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(
            std::string("SELECT DISTINCT ") + table.key + " FROM " + table.name));
        while (rs->next()) {
          std::string key = rs->getString(1).asStdString();
          if (shard_of_(key, shards) == shard) out.push_back(std::move(key));
        }
        c.Commit();
        return out;
      });
  return keys;
}

Status MysqlShardData::Upsert(const Table& table, const std::vector<std::string>& columns,
                              const std::vector<std::string>& rows, ShardCopyStats& stats) {
  if (rows.empty()) return OkStatus();
  std::string text = std::string("INSERT INTO ") + table.name + " (";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) text += ',';
    text += '`';
    text += columns[i];
    text += '`';
  }
  text += ") VALUES ";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) text += ',';
    text += rows[i];
  }
  text += " ON DUPLICATE KEY UPDATE ";
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string col = '`' + columns[i] + '`';
    if (i > 0) text += ',';
    text += table.keep_max_id && columns[i] == "max_id"
                ? col + " = GREATEST(" + col + ", VALUES(" + col + "))"
                : col + " = VALUES(" + col + ")";
  }
  ++stats.statements;
  stats.rows += static_cast<int64_t>(rows.size());
  return pool_->Run<Ok>(kSession, "copy shard rows", [&](MysqlConn& c) -> Result<Ok> {
    c.Update(text);
    c.Commit();
    return Ok{};
  });
}

Status MysqlShardData::CopyKey(const Table& table, const std::string& key, MysqlShardData& to,
                               bool delta, const Pace& pace, ShardCopyStats& stats) {
  const std::string where = std::string(" WHERE ") + table.key + " = " + Hex(key);
  const std::string from = std::string("SELECT * FROM ") + table.name + where;
  if (table.page == nullptr) {
    ++stats.statements;
    auto page = Select(*pool_, from, nullptr);
    if (!page) return page.error();
    if (Status s = to.Upsert(table, page->columns, page->rows, stats); !s) return s;
    return pace(static_cast<int64_t>(page->rows.size())) == kGoOn
               ? OkStatus()
               : Status(MakeError(ErrorCode::kShuttingDown, "shard copy stopped"));
  }
  int64_t after = 0;
  if (delta) {
    // The target holds every message up to its max seq (seqs have no
    // hole); of those, only a status can have changed since.
    ++stats.statements;
    auto have = Select(
        *to.pool_,
        std::string("SELECT COALESCE(MAX(") + table.page + "), 0) AS m FROM " + table.name + where,
        "m");
    if (!have) return have.error();
    after = have->last;
    ++stats.statements;
    auto changed = Select(
        *pool_, from + " AND " + table.page + " <= " + std::to_string(after) + " AND status <> 0",
        nullptr);
    if (!changed) return changed.error();
    if (Status s = to.Upsert(table, changed->columns, changed->rows, stats); !s) return s;
  }
  for (;;) {
    ++stats.statements;
    auto page = Select(*pool_,
                       from + " AND " + table.page + " > " + std::to_string(after) + " ORDER BY " +
                           table.page + " LIMIT " + std::to_string(kPageRows),
                       table.page);
    if (!page) return page.error();
    if (page->rows.empty()) return OkStatus();
    if (Status s = to.Upsert(table, page->columns, page->rows, stats); !s) return s;
    after = page->last;
    if (pace(static_cast<int64_t>(page->rows.size())) != kGoOn) {
      return MakeError(ErrorCode::kShuttingDown, "shard copy stopped");
    }
  }
}

Result<ShardCopyStats> MysqlShardData::CopyShard(uint32_t shard, uint32_t shards,
                                                 ShardDataStore& to, bool delta, const Pace& pace) {
  auto* target = dynamic_cast<MysqlShardData*>(&to);
  if (target == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "a shard copy needs two MySQL groups");
  }
  ShardCopyStats stats;
  for (const Table& table : kTables) {
    auto keys = KeysOf(table, shard, shards, stats);
    if (!keys) return keys.error();
    for (const std::string& key : *keys) {
      if (Status s = CopyKey(table, key, *target, delta, pace, stats); !s) return s.error();
    }
  }
  return stats;
}

Result<int64_t> MysqlShardData::DeleteShard(uint32_t shard, uint32_t shards, const Pace& pace) {
  ShardCopyStats stats;
  int64_t deleted = 0;
  for (const Table& table : kTables) {
    auto keys = KeysOf(table, shard, shards, stats);
    if (!keys) return keys.error();
    for (const std::string& key : *keys) {
      const std::string text = std::string("DELETE FROM ") + table.name + " WHERE " + table.key +
                               " = " + Hex(key) + " LIMIT " + std::to_string(kDeleteRows);
      for (;;) {
        auto n = pool_->Run<int64_t>(kSession, "delete shard rows",
                                     [&](MysqlConn& c) -> Result<int64_t> {
                                       const int64_t rows = c.Update(text);
                                       c.Commit();
                                       return rows;
                                     });
        if (!n) return n.error();
        deleted += *n;
        if (*n > 0 && pace(*n) != kGoOn) {
          return MakeError(ErrorCode::kShuttingDown, "shard clean-up stopped");
        }
        if (*n < kDeleteRows) break;
      }
    }
  }
  return deleted;
}

}  // namespace seqd
