// MysqlStore::ReserveMany's steps (storage/mysql/mysql_store_sql.h): new keys
// created and reserved in one statement, rows created, rows locked and
// advanced under the cluster fences.
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <utility>

#include "storage/mysql/mysql_store_sql.h"
#include "storage/unix_millis.h"

namespace seqd::mysql_leaf {

// Which requests CreateAndReserve serves: those that create their row,
// reserve the row's own step and are not fenced (cluster mode keeps its
// order: rows, then the lease row) and are not stamped (ReserveRows stamps),
// whose key no other request of the batch names (each gets its one range
// from one row). None when `exact_tags` is false: its INSERT would advance
// the row of another key that the column takes for the same.
std::vector<bool> OneStatementRequests(const std::vector<ReserveRequest>& requests,
                                       bool exact_tags) {
  std::vector<bool> at_once(requests.size());
  if (!exact_tags) return at_once;
  std::map<std::string_view, int> named;  // how many requests name each key
  for (const ReserveRequest& r : requests) ++named[r.key];
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReserveRequest& r = requests[i];
    at_once[i] = named[r.key] == 1 && r.create_step > 0 && !r.step && !r.fence && !r.stamp_time;
  }
  return at_once;
}

int InsertNewRows(MysqlConn& c, NewRows what, std::span<const ReserveRequest* const> rows) {
  std::string sql = "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ";
  sql.reserve(sql.size() + 64 * rows.size() + 128);
  for (const ReserveRequest* r : rows) {
    sql += sql.back() == ')' ? ",(" : "(";
    AppendUtf8Literal(sql, r->key);
    sql += ',';
    sql += std::to_string(what == NewRows::kCreate ? 1 : 1 + r->create_step);
    sql += ',';
    sql += std::to_string(r->create_step);
    sql += ',';
    AppendUtf8Literal(sql, r->create_description);
    sql += ')';
  }
  switch (what) {
    case NewRows::kCreate:
      sql += " ON DUPLICATE KEY UPDATE biz_tag = biz_tag";
      break;
    case NewRows::kCreateReserving:
      sql += " ON DUPLICATE KEY UPDATE max_id = max_id + step";
      break;
    case NewRows::kCreateReservingGuarded:
      sql +=
          " ON DUPLICATE KEY UPDATE max_id = "
          "IF(max_id > 9223372036854775807 - step, max_id, max_id + step)";
      break;
  }
  return c.Update(sql);
}

// The other requests that create their row: INSERT ... unless present, in
// key order (two batches never wait for each other in a cycle).
void CreateMissingRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                       const std::vector<bool>& at_once) {
  std::vector<const ReserveRequest*> rows;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].create_step > 0 && !at_once[i]) rows.push_back(&requests[i]);
  }
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->key < b->key; });
  for (size_t at = 0; at < rows.size(); at += kListMax) {
    const size_t n = std::min(kListMax, rows.size() - at);
    InsertNewRows(c, NewRows::kCreate, std::span(rows).subspan(at, n));
  }
}

// New keys in one statement per kListMax of them, whether their rows exist
// or not: one INSERT ... ON DUPLICATE KEY UPDATE creates the missing rows
// with their first segment reserved and advances the others by their step
// (NewRows::kCreateReserving). If every row was new (the affected-rows
// count is the number of rows), each range is [1, create_step]; else one
// SELECT reads where each row stands, and the range is
// [max_id - step, max_id - 1] either way. A row the INSERT would overflow
// fails it (nothing changed): then the guarded statement leaves that row
// as it is, and a row left within a step of the largest max_id (refused,
// or just got there) answers kInternal: its range, if any, is skipped.
// Fills out[i] for each at_once[i].
void CreateAndReserve(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                      const std::vector<bool>& at_once, Slots& out) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (at_once[i]) todo.push_back(i);
  }
  if (todo.empty()) return;
  // In key order: two batches never wait for each other in a cycle.
  std::sort(todo.begin(), todo.end(),
            [&](size_t a, size_t b) { return requests[a].key < requests[b].key; });
  std::vector<const ReserveRequest*> sorted;
  sorted.reserve(todo.size());
  for (size_t i : todo) sorted.push_back(&requests[i]);
  struct Row {
    int64_t max_id = 0, step = 0;
  };
  std::map<std::string, Row> rows;  // by the row's own biz_tag
  for (size_t at = 0; at < todo.size(); at += kListMax) {
    const size_t n = std::min(kListMax, todo.size() - at);
    const auto chunk = std::span(sorted).subspan(at, n);
    bool all_new = false;
    try {
      all_new = InsertNewRows(c, NewRows::kCreateReserving, chunk) == static_cast<int>(n);
    } catch (const sql::SQLException& e) {
      if (e.getErrorCode() != kErrOutOfRange) throw;
      InsertNewRows(c, NewRows::kCreateReservingGuarded, chunk);
    }
    if (all_new) {
      for (size_t i = at; i < at + n; ++i) {
        const int64_t step = requests[todo[i]].create_step;
        out[todo[i]] = ReservedSegment{1, step, step};
      }
      continue;
    }
    const size_t padded = PaddedCount(n);
    // Locking read: the rows are ours until COMMIT; it reads their latest.
    sql::PreparedStatement& sel = c.List(kLockRows, padded);
    for (size_t i = 0; i < padded; ++i) {
      sel.setString(static_cast<unsigned>(i + 1), requests[todo[at + std::min(i, n - 1)]].key);
    }
    std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
    while (rs->next()) rows[rs->getString(1).asStdString()] = Row{rs->getInt64(2), rs->getInt64(3)};
  }
  // Each key's own row (OneStatementRequests: the column compares exactly).
  for (size_t i : todo) {
    if (out[i]) continue;  // a new row
    const Row* row = nullptr;
    if (auto it = rows.find(requests[i].key); it != rows.end()) row = &it->second;
    if (!row) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: row vanished");
    } else if (row->step > 0 && row->max_id > std::numeric_limits<int64_t>::max() - row->step) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: max_id overflow");
    } else {
      out[i] = ReservedSegment{row->max_id - row->step, row->max_id - 1, row->step};
    }
  }
}

namespace {

// (key, token) -> the range recorded under it.
using TokenRanges = std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>>;

// The ranges recorded under the tokens of the requests `todo` names that
// carry one. Read after their rows are locked: a concurrent batch of the
// same key has committed its tokens by then (READ COMMITTED reads them).
TokenRanges ReadTokens(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                       const std::vector<size_t>& todo) {
  std::vector<const ReserveRequest*> asked;
  for (size_t i : todo) {
    if (!requests[i].token.empty()) asked.push_back(&requests[i]);
  }
  TokenRanges out;
  for (size_t at = 0; at < asked.size(); at += kListMax) {
    const size_t n = std::min(kListMax, asked.size() - at);
    std::string sql = "SELECT biz_tag, token, first_id, last_id FROM seqd_block_token WHERE ";
    for (size_t j = 0; j < n; ++j) {
      sql += j ? " OR (biz_tag = " : "(biz_tag = ";
      AppendUtf8Literal(sql, asked[at + j]->key);
      sql += " AND token = ";
      AppendUtf8Literal(sql, asked[at + j]->token);
      sql += ')';
    }
    std::unique_ptr<sql::ResultSet> rs(c.Plain().executeQuery(sql));
    while (rs->next()) {
      out[{rs->getString(1).asStdString(), rs->getString(2).asStdString()}] = {rs->getInt64(3),
                                                                               rs->getInt64(4)};
    }
  }
  return out;
}

// Records each new tokened range of `requests` (out[i] reserved now).
void InsertTokens(MysqlConn& c, const std::vector<ReserveRequest>& requests, const Slots& out,
                  const std::vector<size_t>& todo) {
  const int64_t now_ms = UnixMillisNow();
  std::vector<size_t> fresh;
  for (size_t i : todo) {
    if (!requests[i].token.empty() && out[i] && *out[i] && !(*out[i])->replayed) {
      fresh.push_back(i);
    }
  }
  for (size_t at = 0; at < fresh.size(); at += kListMax) {
    const size_t n = std::min(kListMax, fresh.size() - at);
    std::string sql =
        "INSERT INTO seqd_block_token (biz_tag, token, first_id, last_id, created_ms) VALUES ";
    for (size_t j = 0; j < n; ++j) {
      const size_t i = fresh[at + j];
      const ReservedSegment& range = **out[i];
      sql += j ? ",(" : "(";
      AppendUtf8Literal(sql, requests[i].key);
      sql += ',';
      AppendUtf8Literal(sql, requests[i].token);
      sql += ',' + std::to_string(range.first) + ',' + std::to_string(range.last) + ',' +
             std::to_string(now_ms) + ')';
    }
    c.Update(sql);
  }
}

}  // namespace

// The requests not done at once: rows locked and read, the cluster fences
// written, the new max_ids set. Fills out[i] for each !at_once[i].
void ReserveRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                 const std::vector<bool>& at_once, Slots& out, bool read_tokens,
                 bool exact_tags) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!at_once[i]) todo.push_back(i);
  }
  if (todo.empty()) return;
  struct Row {
    int64_t max_id = 0;  // as locked, then as this batch leaves it
    int64_t step = 0;
    int64_t reserved = 0;  // ranges taken from it in this batch
    bool stamp = false;    // a range taken with stamp_time
  };
  std::map<std::string, Row> rows;  // by the row's own biz_tag
  for (size_t at = 0; at < todo.size(); at += kListMax) {
    const size_t n = std::min(kListMax, todo.size() - at);
    const size_t padded = PaddedCount(n);
    sql::PreparedStatement& lock = c.List(kLockRows, padded);
    for (size_t i = 0; i < padded; ++i) {
      lock.setString(static_cast<unsigned>(i + 1), requests[todo[at + std::min(i, n - 1)]].key);
    }
    std::unique_ptr<sql::ResultSet> rs(lock.executeQuery());
    while (rs->next()) {
      Row& row = rows[rs->getString(1).asStdString()];
      row.max_id = rs->getInt64(2);
      row.step = rs->getInt64(3);
    }
  }
  // Which row each request names: its own, by its exact bytes. Under a
  // column that folds case or pads spaces (not `exact_tags`), a key with no
  // row of its own may have matched another key's row: the server says
  // whether one answers to it (rare: one query each), and then it is
  // refused, and no row changes for it.
  std::vector<Row*> row_of(requests.size());  // null: no such key
  std::vector<bool> folds_onto_another(requests.size());
  for (size_t i : todo) {
    const std::string& key = requests[i].key;
    if (auto it = rows.find(key); it != rows.end()) {
      row_of[i] = &it->second;
      continue;
    }
    if (exact_tags) continue;
    std::unique_ptr<sql::ResultSet> rs(c.Stmt(kRowTag, key).executeQuery());
    folds_onto_another[i] = rs->next();
  }
  // Cluster fences: each shard's lease row once, in shard order (two
  // batches never wait for each other in a cycle), as ReserveImpl's.
  struct Fence {
    const std::string* owner = nullptr;
    bool held = false;
  };
  std::map<std::pair<uint32_t, int64_t>, Fence> fence_held;
  for (size_t i : todo) {
    const ReserveRequest& r = requests[i];
    if (r.fence) fence_held[{r.fence->shard, r.fence->epoch}].owner = &r.fence->owner;
  }
  for (auto& [shard_epoch, fence] : fence_held) {
    fence.held = c.Execute(kFence, static_cast<int>(shard_epoch.first), *fence.owner,
                           shard_epoch.second) > 0;
  }
  // The tokens recorded before, and those this batch records (a request
  // named twice in one batch, its retry, replays its first range).
  TokenRanges tokens = read_tokens ? ReadTokens(c, requests, todo) : TokenRanges{};
  for (size_t i : todo) {
    const ReserveRequest& r = requests[i];
    Row* row = row_of[i];
    const auto recorded = r.token.empty() ? tokens.end()
                                          : tokens.find({r.key, std::string(r.token)});
    if (r.step && *r.step <= 0) {
      out[i] = MakeError(ErrorCode::kInvalidArgument, "mysql reserve: step must be > 0");
    } else if (!r.token.empty() && !r.step) {
      out[i] = MakeError(ErrorCode::kInvalidArgument, "a token needs a count");
    } else if (recorded != tokens.end()) {
      const auto [first, last] = recorded->second;
      if (last - first + 1 != *r.step) {
        out[i] = MakeError(ErrorCode::kInvalidArgument, "token already used with another count");
      } else {
        out[i] = ReservedSegment{first, last, row ? row->step : 0, true};
      }
    } else if (r.fence && !fence_held[{r.fence->shard, r.fence->epoch}].held) {
      out[i] = MakeError(ErrorCode::kNotServing, "shard " + std::to_string(r.fence->shard) +
                                                     " is no longer held by this instance");
    } else if (folds_onto_another[i]) {
      out[i] = KeyFoldsOntoAnotherError();
    } else if (!row) {
      out[i] = MakeError(ErrorCode::kUnknownKey, "no such key");
    } else if (const int64_t by = r.step.value_or(row->step);
               by > 0 && row->max_id > std::numeric_limits<int64_t>::max() - by) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: max_id overflow");
    } else {
      out[i] = ReservedSegment{row->max_id, row->max_id + by - 1, row->step};
      row->max_id += by;
      ++row->reserved;
      row->stamp = row->stamp || r.stamp_time;
      if (!r.token.empty()) {
        tokens[{r.key, std::string(r.token)}] = {(*out[i])->first, (*out[i])->last};
      }
    }
  }
  std::vector<std::pair<const std::string*, int64_t>> changed;
  std::vector<const std::string*> stamped;  // in tag order, as rows
  for (const auto& [tag, row] : rows) {
    if (row.reserved > 0) changed.emplace_back(&tag, row.max_id);
    if (row.stamp) stamped.push_back(&tag);
  }
  for (size_t at = 0; at < changed.size(); at += kListMax) {
    const size_t n = std::min(kListMax, changed.size() - at);
    const size_t padded = PaddedCount(n);
    sql::PreparedStatement& set = c.List(kSetMaxIds, padded);
    for (size_t i = 0; i < padded; ++i) {
      const auto& [tag, max_id] = changed[at + std::min(i, n - 1)];
      set.setString(static_cast<unsigned>(2 * i + 1), *tag);
      set.setInt64(static_cast<unsigned>(2 * i + 2), max_id);
      set.setString(static_cast<unsigned>(2 * padded + i + 1), *tag);
    }
    set.executeUpdate();
  }
  StampTimes(c, stamped);
  InsertTokens(c, requests, out, todo);
}

}  // namespace seqd::mysql_leaf
