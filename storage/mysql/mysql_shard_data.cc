#include "storage/mysql/mysql_shard_data.h"

#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>

#include <memory>
#include <string>
#include <vector>

namespace seqd {

// A table whose rows belong to the key in column `key`.
//
// Keys mode (`lead` null: `key` leads the primary key): the distinct keys
// are listed a page at a time (an index range, read in key order), and the
// shard's keys' rows are read by key; `page`: a second primary-key column
// to read a key's rows by, in pages (null: all of a key's rows at once, for
// tables with few rows per key).
//
// Rows mode (`lead` set: the primary key is (lead, key), and no index
// starts with `key`): the rows are read a page at a time in primary-key
// order, and those whose key hashes to the shard are kept; a key alone
// could only be found by scanning the whole table.
struct MysqlShardData::Table {
  const char* name;
  const char* key;
  const char* page;
  bool keep_max_id;  // leaf_alloc: max_id never lowered by a copy
  const char* lead;
};

namespace {

constexpr MysqlShardData::Pace::result_type kGoOn = true;
constexpr int64_t kDeleteRows = 5000;

const char* const kSql[] = {"SELECT 1"};
const MysqlSession kSession{kSql, nullptr, std::nullopt};

// A page of rows, each rendered as "(v1,v2,...)" for an INSERT.
struct Page {
  std::vector<std::string> columns;
  std::vector<std::string> rows;
  int64_t last = 0;  // the page column's value in the last row
  // By row: the values of the columns asked for as they are (bytes).
  std::vector<std::vector<std::string>> raw;
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
// column whose last value is kept (may be null), `raw_columns` those whose
// values are kept as they are.
Result<Page> Select(MysqlPool& pool, const std::string& query, const char* page_column,
                    const std::vector<const char*>& raw_columns = {}) {
  return pool.Run<Page>(kSession, "read shard rows", [&](MysqlConn& c) -> Result<Page> {
    Page page;
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(query));
    sql::ResultSetMetaData* meta = rs->getMetaData();
    const unsigned n = meta->getColumnCount();
    std::vector<bool> numeric(n);
    unsigned page_index = 0;
    std::vector<unsigned> raw_index(raw_columns.size(), 0);
    for (unsigned i = 1; i <= n; ++i) {
      page.columns.push_back(meta->getColumnLabel(i).asStdString());
      numeric[i - 1] = Numeric(meta->getColumnType(i));
      if (page_column != nullptr && page.columns.back() == page_column) page_index = i;
      for (size_t r = 0; r < raw_columns.size(); ++r) {
        if (page.columns.back() == raw_columns[r]) raw_index[r] = i;
      }
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
      if (!raw_index.empty()) {
        std::vector<std::string> raw;
        for (unsigned i : raw_index) raw.push_back(i > 0 ? rs->getString(i).asStdString() : "");
        page.raw.push_back(std::move(raw));
      }
    }
    c.Commit();  // the next read sees what committed since
    return page;
  });
}

constexpr MysqlShardData::Table kTables[] = {
    {"leaf_alloc", "biz_tag", nullptr, true, nullptr},
    {"seqd_block_token", "biz_tag", nullptr, false, nullptr},
    {"seqd_key_time", "biz_tag", nullptr, false, nullptr},
    {"seqd_min_seq", "biz_tag", nullptr, false, nullptr},
    {"seqd_user_seq", "conv", nullptr, false, "user_id"},
    {"seqd_conv", "conv_id", nullptr, false, nullptr},
    {"seqd_conv_member", "conv_id", nullptr, false, nullptr},
    {"seqd_message", "conv_id", "seq", false, nullptr},
};

// Rows mode: the rows of `table` after the primary key (lead, key) of
// `after` (none: from the start), in primary-key order; `what`: the
// columns selected.
std::string RowPageQuery(const MysqlShardData::Table& table, const char* what,
                         const std::optional<std::pair<std::string, std::string>>& after,
                         int64_t limit) {
  std::string q = std::string("SELECT ") + what + " FROM " + table.name;
  if (after) {
    // The range optimizer reads this as two ranges of the primary key.
    q += std::string(" WHERE ") + table.lead + " > " + Hex(after->first) + " OR (" + table.lead +
         " = " + Hex(after->first) + " AND " + table.key + " > " + Hex(after->second) + ")";
  }
  return q + " ORDER BY " + table.lead + ", " + table.key + " LIMIT " + std::to_string(limit);
}

Error Stopped(const char* what) { return MakeError(ErrorCode::kShuttingDown, what); }

}  // namespace

Result<std::vector<std::string>> MysqlShardData::KeyPage(const Table& table,
                                                         const std::optional<std::string>& after,
                                                         ShardCopyStats& stats) {
  std::string q = std::string("SELECT DISTINCT ") + table.key + " FROM " + table.name;
  if (after) q += std::string(" WHERE ") + table.key + " > " + Hex(*after);
  q += std::string(" ORDER BY ") + table.key + " LIMIT " + std::to_string(options_.keys_per_page);
  ++stats.statements;
  return pool_->Run<std::vector<std::string>>(
      kSession, "list shard keys", [&](MysqlConn& c) -> Result<std::vector<std::string>> {
        std::vector<std::string> out;
        std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(q));
        while (rs->next()) out.push_back(rs->getString(1).asStdString());
        c.Commit();
        return out;
      });
}

template <typename Each>
Status MysqlShardData::ForEachShardKey(const Table& table, uint32_t shard, uint32_t shards,
                                       const Pace& pace, ShardCopyStats& stats, Each each) {
  std::optional<std::string> after;
  for (;;) {
    auto keys = KeyPage(table, after, stats);
    if (!keys) return keys.error();
    for (const std::string& key : *keys) {
      if (shard_of_(key, shards) != shard) continue;
      if (Status s = each(key); !s) return s;
    }
    if (static_cast<int64_t>(keys->size()) < options_.keys_per_page) return OkStatus();
    after = keys->back();
    if (pace(0) != kGoOn) return Stopped("shard move stopped");
  }
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
    return pace(static_cast<int64_t>(page->rows.size())) == kGoOn ? OkStatus()
                                                                  : Stopped("shard copy stopped");
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
                           table.page + " LIMIT " + std::to_string(options_.rows_per_page),
                       table.page);
    if (!page) return page.error();
    if (page->rows.empty()) return OkStatus();
    if (Status s = to.Upsert(table, page->columns, page->rows, stats); !s) return s;
    after = page->last;
    if (pace(static_cast<int64_t>(page->rows.size())) != kGoOn) {
      return Stopped("shard copy stopped");
    }
  }
}

Status MysqlShardData::CopyRows(const Table& table, uint32_t shard, uint32_t shards,
                                MysqlShardData& to, const Pace& pace, ShardCopyStats& stats) {
  std::optional<std::pair<std::string, std::string>> after;
  for (;;) {
    ++stats.statements;
    auto page = Select(*pool_, RowPageQuery(table, "*", after, options_.rows_per_page), nullptr,
                       {table.lead, table.key});
    if (!page) return page.error();
    std::vector<std::string> mine;
    for (size_t i = 0; i < page->rows.size(); ++i) {
      if (shard_of_(page->raw[i][1], shards) == shard) mine.push_back(std::move(page->rows[i]));
    }
    if (Status s = to.Upsert(table, page->columns, mine, stats); !s) return s;
    if (pace(static_cast<int64_t>(mine.size())) != kGoOn) return Stopped("shard copy stopped");
    if (static_cast<int64_t>(page->rows.size()) < options_.rows_per_page) return OkStatus();
    after.emplace(page->raw.back()[0], page->raw.back()[1]);
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
    Status s =
        table.lead != nullptr
            ? CopyRows(table, shard, shards, *target, pace, stats)
            : ForEachShardKey(table, shard, shards, pace, stats, [&](const std::string& key) {
                return CopyKey(table, key, *target, delta, pace, stats);
              });
    if (!s) return s.error();
  }
  return stats;
}

Result<int64_t> MysqlShardData::DeleteNow(const std::string& text) {
  return pool_->Run<int64_t>(kSession, "delete shard rows", [&](MysqlConn& c) -> Result<int64_t> {
    const int64_t rows = c.Update(text);
    c.Commit();
    return rows;
  });
}

Result<int64_t> MysqlShardData::DeleteKey(const Table& table, const std::string& key,
                                          const Pace& pace) {
  const std::string text = std::string("DELETE FROM ") + table.name + " WHERE " + table.key +
                           " = " + Hex(key) + " LIMIT " + std::to_string(kDeleteRows);
  int64_t deleted = 0;
  for (;;) {
    auto n = DeleteNow(text);
    if (!n) return n.error();
    deleted += *n;
    if (*n > 0 && pace(*n) != kGoOn) return Stopped("shard clean-up stopped");
    if (*n < kDeleteRows) return deleted;
  }
}

Result<int64_t> MysqlShardData::DeleteRows(const Table& table, uint32_t shard, uint32_t shards,
                                           const Pace& pace) {
  const std::string what = std::string(table.lead) + ", " + table.key;
  std::optional<std::pair<std::string, std::string>> after;
  int64_t deleted = 0;
  for (;;) {
    auto page = Select(*pool_, RowPageQuery(table, what.c_str(), after, options_.rows_per_page),
                       nullptr, {table.lead, table.key});
    if (!page) return page.error();
    std::string which;  // the shard's rows of the page, by primary key
    for (const std::vector<std::string>& row : page->raw) {
      if (shard_of_(row[1], shards) != shard) continue;
      which += which.empty() ? "(" : " OR (";
      which += std::string(table.lead) + " = " + Hex(row[0]) + " AND " + table.key + " = " +
               Hex(row[1]) + ")";
    }
    if (!which.empty()) {
      const std::string text = std::string("DELETE FROM ") + table.name + " WHERE " + which;
      auto n = DeleteNow(text);
      if (!n) return n.error();
      deleted += *n;
      if (pace(*n) != kGoOn) return Stopped("shard clean-up stopped");
    } else if (pace(0) != kGoOn) {
      return Stopped("shard clean-up stopped");
    }
    if (static_cast<int64_t>(page->raw.size()) < options_.rows_per_page) return deleted;
    after.emplace(page->raw.back()[0], page->raw.back()[1]);
  }
}

Result<int64_t> MysqlShardData::DeleteShard(uint32_t shard, uint32_t shards, const Pace& pace) {
  ShardCopyStats stats;
  int64_t deleted = 0;
  for (const Table& table : kTables) {
    if (table.lead != nullptr) {
      auto n = DeleteRows(table, shard, shards, pace);
      if (!n) return n.error();
      deleted += *n;
      continue;
    }
    Status s = ForEachShardKey(table, shard, shards, pace, stats, [&](const std::string& key) {
      auto n = DeleteKey(table, key, pace);
      if (!n) return Status(n.error());
      deleted += *n;
      return OkStatus();
    });
    if (!s) return s.error();
  }
  return deleted;
}

}  // namespace seqd
