// MysqlStore's operations on the leaf_alloc table: the schema, its
// statements, reservations (one key, fenced, or a batch), key creation and
// reads. One piece because every operation shares the statement table and
// session below and the same COMMIT discipline (an unknown outcome skips the
// range, never serves it twice); the URL parsing is in mysql_url.cc.
#include "storage/mysql_store.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <utility>

namespace seqd {
namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS leaf_alloc ("
    "biz_tag varchar(128) NOT NULL DEFAULT '', "
    "max_id bigint(20) NOT NULL DEFAULT '1', "
    "step int(11) NOT NULL, "
    "description varchar(256) DEFAULT NULL, "
    "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "
    "PRIMARY KEY (biz_tag)) ENGINE=InnoDB";

enum StmtId {
  kReserveBy,
  kReserveRowStep,
  kReserveSelect,
  kInsert,
  kSelectOne,
  kList,
  kSetStep,
  kPing,
  kFence,
  kRowTag,
  kNumStmts,
};

#define SEQD_MYSQL_ROW_COLUMNS \
  "biz_tag, max_id, step, description, UNIX_TIMESTAMP(update_time) * 1000"

const char* const kSql[kNumStmts] = {
    /* kReserveBy */ "UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?",
    /* kReserveRowStep */ "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?",
    /* kReserveSelect */ "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?",
    /* kInsert */ "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, ?, ?)",
    /* kSelectOne */ "SELECT " SEQD_MYSQL_ROW_COLUMNS " FROM leaf_alloc WHERE biz_tag = ?",
    /* kList */
    "SELECT " SEQD_MYSQL_ROW_COLUMNS " FROM leaf_alloc WHERE biz_tag > ? ORDER BY biz_tag LIMIT ?",
    /* kSetStep */ "UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?",
    /* kPing */ "SELECT 1",
    /* kFence */
    ("UPDATE seqd_shard_lease SET fences = fences + 1 "
     "WHERE shard = ? AND owner = ? AND owner <> '' AND epoch = ?"),
    /* kRowTag */ "SELECT biz_tag FROM leaf_alloc WHERE biz_tag = ?",
};

// Statements whose text depends on a count. Counts are rounded up to a
// power of two (PaddedCount), the last item repeated, so each connection
// prepares a handful of them.
enum ListKind {
  // Locks the rows of keys and reads them, in index order (the parameters
  // take the column's collation, so the primary key is used).
  kLockRows,
  // Sets max_id of rows (biz_tag, new max_id); then the biz_tags again.
  kSetMaxIds,
  // Inserts rows (biz_tag, step, description) with max_id = 1, unless present.
  kInsertMissing,
  // Creates and reserves (CreateAndReserve): rows (biz_tag, max_id, step,
  // description) inserted with max_id = 1 + step (their first segment,
  // [1, step], reserved), or, for a row already there, max_id advanced by
  // the row's own step; unchanged if that would overflow. A row with
  // max_id 0 is padding (the last item again): it changes nothing.
  kCreateReserving,
};

std::string ListSql(int kind, size_t n) {
  switch (static_cast<ListKind>(kind)) {
    case kLockRows:
      return "SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag IN (" + RepeatSql("?", n) +
             ") ORDER BY biz_tag FOR UPDATE";
    case kSetMaxIds:
      return "UPDATE leaf_alloc SET max_id = CASE biz_tag" + RepeatSql(" WHEN ? THEN ?", n, "") +
             " END WHERE biz_tag IN (" + RepeatSql("?", n) + ")";
    case kInsertMissing:
      return "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES " +
             RepeatSql("(?,1,?,?)", n) + " ON DUPLICATE KEY UPDATE biz_tag = biz_tag";
    case kCreateReserving:
      return "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES " +
             RepeatSql("(?,?,?,?)", n) +
             " ON DUPLICATE KEY UPDATE max_id = IF(VALUES(max_id) = 0 OR "
             "max_id > 9223372036854775807 - step, max_id, max_id + step)";
  }
  return {};
}

// Items per list statement at most; a batch beyond it takes several.
constexpr size_t kListMax = 1024;

size_t PaddedCount(size_t n) { return std::bit_ceil(n); }

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A duplicate key escaping a call can only be a key that exists.
const MysqlSession kSession{kSql, ListSql, ErrorCode::kKeyExists};

KeyRow ReadRow(sql::ResultSet& rs) {
  KeyRow row;
  row.key = rs.getString(1).asStdString();
  row.max_id = rs.getInt64(2);
  row.step = rs.getInt64(3);
  row.description = rs.isNull(4) ? std::string() : rs.getString(4).asStdString();
  row.update_time_ms = rs.isNull(5) ? 0 : rs.getInt64(5);
  return row;
}

}  // namespace

MysqlStore::MysqlStore(MysqlOptions options)
    : pool_(std::make_shared<MysqlPool>(std::move(options))) {}

MysqlStore::MysqlStore(std::shared_ptr<MysqlPool> pool) : pool_(std::move(pool)) {}

MysqlStore::~MysqlStore() = default;

std::string MysqlStore::Describe() const { return DescribeMysql(pool_->options()); }

Status MysqlStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "create table", [](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::Statement> s(c.conn->createStatement());
    s->execute(kCreateTable);
    s->execute(MinSeqTableSql());
    c.Commit();
    return Ok{};
  });
}

Result<ReservedSegment> MysqlStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  return ReserveImpl(key, step, nullptr);
}

Result<ReservedSegment> MysqlStore::ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                                  const ShardFence& fence) {
  return ReserveImpl(key, step, &fence);
}

Result<ReservedSegment> MysqlStore::ReserveImpl(std::string_view key, std::optional<int64_t> step,
                                                const ShardFence* fence) {
  if (step && *step <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "mysql reserve: step must be > 0");
  }
  const std::string k(key);
  return pool_->Run<ReservedSegment>(
      kSession, "reserve", [&](MysqlConn& c) -> Result<ReservedSegment> {
        int updated = 0;
        if (step) {
          sql::PreparedStatement& upd = c.Stmt(kReserveBy);
          upd.setInt64(1, *step);
          upd.setString(2, k);
          updated = upd.executeUpdate();
        } else {
          sql::PreparedStatement& upd = c.Stmt(kReserveRowStep);
          upd.setString(1, k);
          updated = upd.executeUpdate();
        }
        if (updated == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");  // rolled back

        sql::PreparedStatement& sel = c.Stmt(kReserveSelect);
        sel.setString(1, k);
        std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
        if (!rs->next()) return MakeError(ErrorCode::kInternal, "mysql reserve: row vanished");
        const int64_t max_id = rs->getInt64(1);
        const int64_t table_step = rs->getInt64(2);
        rs.reset();
        if (fence) {
          // Last, just before COMMIT: the lease row stays locked only for
          // the commit, so an owner frozen mid-transaction rarely holds it
          // (a takeover's CAS waits for the lock), and never for long (the
          // server ends idle transactions: storage/mysql_pool.h).
          sql::PreparedStatement& f = c.Stmt(kFence);
          f.setInt(1, static_cast<int>(fence->shard));
          f.setString(2, fence->owner);
          f.setInt64(3, fence->epoch);
          if (f.executeUpdate() == 0) {
            return MakeError(ErrorCode::kNotServing, "shard " + std::to_string(fence->shard) +
                                                         " is no longer held by this instance");
          }
        }
        try {
          c.Commit();
        } catch (...) {
          // Outcome unknown: the range may have committed, but it is never
          // served; the pool runs the reservation again (a gap, never a
          // duplicate).
          if (c.CommitOutcomeUnknown()) {
            ProcessStoreStats().ranges_skipped.fetch_add(1, std::memory_order_relaxed);
          }
          throw;
        }
        const int64_t by = step.value_or(table_step);
        return ReservedSegment{max_id - by, max_id - 1, table_step};
      });
}

namespace {

using Slots = std::vector<std::optional<Result<ReservedSegment>>>;

// Which requests CreateAndReserve serves: those that create their row,
// reserve the row's own step and are not fenced (cluster mode keeps its
// order: rows, then the lease row), whose key no other request of the batch
// names, even ignoring ASCII case (each gets its one range from one row).
std::vector<bool> OneStatementRequests(const std::vector<ReserveRequest>& requests) {
  std::map<std::string, int> named;  // ASCII-lowercased key -> requests naming it
  for (const ReserveRequest& r : requests) ++named[AsciiLower(r.key)];
  std::vector<bool> at_once(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReserveRequest& r = requests[i];
    at_once[i] = r.create_step > 0 && !r.step && !r.fence && named[AsciiLower(r.key)] == 1;
  }
  return at_once;
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
    const size_t padded = PaddedCount(n);
    sql::PreparedStatement& ins = c.List(kInsertMissing, padded);
    for (size_t i = 0; i < padded; ++i) {
      const ReserveRequest& r = *rows[at + std::min(i, n - 1)];
      ins.setString(static_cast<unsigned>(3 * i + 1), r.key);
      ins.setInt64(static_cast<unsigned>(3 * i + 2), r.create_step);
      ins.setString(static_cast<unsigned>(3 * i + 3), std::string(r.create_description));
    }
    ins.executeUpdate();
  }
}

// New keys in two statements per kListMax of them, whether their rows exist
// or not: one INSERT ... ON DUPLICATE KEY UPDATE creates the missing rows
// with their first segment reserved and advances the others by their step
// (kCreateReserving), then one SELECT reads where each row stands; the
// range is [max_id - step, max_id - 1] either way. Fills out[i] for each
// at_once[i]. A row left within a step of the largest max_id (the INSERT
// refused to overflow it, or it just got there) answers kInternal: its
// range, if any, is skipped.
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
  struct Row {
    int64_t max_id = 0, step = 0;
  };
  std::map<std::string, Row> rows;  // by the row's own biz_tag
  for (size_t at = 0; at < todo.size(); at += kListMax) {
    const size_t n = std::min(kListMax, todo.size() - at);
    const size_t padded = PaddedCount(n);
    sql::PreparedStatement& ins = c.List(kCreateReserving, padded);
    for (size_t i = 0; i < padded; ++i) {
      const ReserveRequest& r = requests[todo[at + std::min(i, n - 1)]];
      const auto p = static_cast<unsigned>(4 * i);
      ins.setString(p + 1, r.key);
      ins.setInt64(p + 2, i < n ? 1 + r.create_step : 0);  // 0: padding, changes nothing
      ins.setInt64(p + 3, r.create_step);
      ins.setString(p + 4, std::string(r.create_description));
    }
    ins.executeUpdate();
    // Locking read: the rows are ours until COMMIT; it reads their latest.
    sql::PreparedStatement& sel = c.List(kLockRows, padded);
    for (size_t i = 0; i < padded; ++i) {
      sel.setString(static_cast<unsigned>(i + 1), requests[todo[at + std::min(i, n - 1)]].key);
    }
    std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
    while (rs->next()) rows[rs->getString(1).asStdString()] = Row{rs->getInt64(2), rs->getInt64(3)};
  }
  // A key may name a row of another ASCII case under a case-insensitive
  // collation: its only row, since no other request names it.
  std::map<std::string, const Row*> by_folded;
  for (const auto& [tag, row] : rows) by_folded.emplace(AsciiLower(tag), &row);
  for (size_t i : todo) {
    const Row* row = nullptr;
    if (auto it = rows.find(requests[i].key); it != rows.end()) {
      row = &it->second;
    } else if (auto f = by_folded.find(AsciiLower(requests[i].key)); f != by_folded.end()) {
      row = f->second;
    }
    if (!row) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: row vanished");
    } else if (row->step > 0 && row->max_id > std::numeric_limits<int64_t>::max() - row->step) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: max_id overflow");
    } else {
      out[i] = ReservedSegment{row->max_id - row->step, row->max_id - 1, row->step};
    }
  }
}

// The requests not done at once: rows locked and read, the cluster fences
// written, the new max_ids set. Fills out[i] for each !at_once[i].
void ReserveRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                 const std::vector<bool>& at_once, Slots& out) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!at_once[i]) todo.push_back(i);
  }
  if (todo.empty()) return;
  struct Row {
    int64_t max_id = 0;  // as locked, then as this batch leaves it
    int64_t step = 0;
    int64_t reserved = 0;  // ranges taken from it in this batch
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
  // Which row each request names. The table's collation decides: a key
  // that is no row's exact name but equals one ignoring ASCII case (keys
  // are ASCII) may be that row under a case-insensitive collation; the
  // server says which (rare: one query each).
  std::map<std::string, std::string> by_folded;  // ASCII-lowercased -> row's tag
  for (const auto& [tag, row] : rows) by_folded.emplace(AsciiLower(tag), tag);
  std::vector<Row*> row_of(requests.size());  // null: no such key
  for (size_t i : todo) {
    const std::string& key = requests[i].key;
    if (auto it = rows.find(key); it != rows.end()) {
      row_of[i] = &it->second;
      continue;
    }
    if (!by_folded.count(AsciiLower(key))) continue;
    sql::PreparedStatement& q = c.Stmt(kRowTag);
    q.setString(1, key);
    std::unique_ptr<sql::ResultSet> rs(q.executeQuery());
    if (!rs->next()) continue;
    if (auto it = rows.find(rs->getString(1).asStdString()); it != rows.end()) {
      row_of[i] = &it->second;
    }
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
    sql::PreparedStatement& f = c.Stmt(kFence);
    f.setInt(1, static_cast<int>(shard_epoch.first));
    f.setString(2, *fence.owner);
    f.setInt64(3, shard_epoch.second);
    fence.held = f.executeUpdate() > 0;
  }
  for (size_t i : todo) {
    const ReserveRequest& r = requests[i];
    Row* row = row_of[i];
    if (r.step && *r.step <= 0) {
      out[i] = MakeError(ErrorCode::kInvalidArgument, "mysql reserve: step must be > 0");
    } else if (r.fence && !fence_held[{r.fence->shard, r.fence->epoch}].held) {
      out[i] = MakeError(ErrorCode::kNotServing, "shard " + std::to_string(r.fence->shard) +
                                                     " is no longer held by this instance");
    } else if (!row) {
      out[i] = MakeError(ErrorCode::kUnknownKey, "no such key");
    } else if (const int64_t by = r.step.value_or(row->step);
               by > 0 && row->max_id > std::numeric_limits<int64_t>::max() - by) {
      out[i] = MakeError(ErrorCode::kInternal, "mysql reserve: max_id overflow");
    } else {
      out[i] = ReservedSegment{row->max_id, row->max_id + by - 1, row->step};
      row->max_id += by;
      ++row->reserved;
    }
  }
  std::vector<std::pair<const std::string*, int64_t>> changed;
  for (const auto& [tag, row] : rows) {
    if (row.reserved > 0) changed.emplace_back(&tag, row.max_id);
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
}

}  // namespace

std::vector<Result<ReservedSegment>> MysqlStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  using Results = std::vector<Result<ReservedSegment>>;
  if (requests.size() == 1 && requests[0].create_step <= 0) {  // already prepared statements
    const ReserveRequest& r = requests[0];
    return Results{ReserveImpl(r.key, r.step, r.fence ? &*r.fence : nullptr)};
  }
  const std::vector<bool> at_once = OneStatementRequests(requests);
  // One transaction: the rows created first, then reserved.
  Result<Results> result =
      pool_->Run<Results>(kSession, "reserve many", [&](MysqlConn& c) -> Result<Results> {
        Slots slots(requests.size());
        CreateMissingRows(c, requests, at_once);
        CreateAndReserve(c, requests, at_once, slots);
        ReserveRows(c, requests, at_once, slots);
        Results out;
        out.reserve(requests.size());
        for (auto& slot : slots) out.push_back(std::move(*slot));
        try {
          c.Commit();
        } catch (...) {
          // As in ReserveImpl: ranges that may have committed are never served.
          if (c.CommitOutcomeUnknown()) {
            const auto served =
                std::count_if(out.begin(), out.end(), [](const auto& r) { return r.ok(); });
            ProcessStoreStats().ranges_skipped.fetch_add(static_cast<int64_t>(served),
                                                         std::memory_order_relaxed);
          }
          throw;
        }
        return out;
      });
  if (!result) return Results(requests.size(), result.error());
  return std::move(*result);
}

Status MysqlStore::CreateKeys(const std::vector<NewKey>& unsorted, std::string_view description) {
  const std::string d(description);
  // Inserted in key order: two batches never wait for each other in a cycle.
  std::vector<NewKey> keys = unsorted;
  std::sort(keys.begin(), keys.end(),
            [](const NewKey& a, const NewKey& b) { return a.key < b.key; });
  // Safe to run again after a COMMIT with an unknown outcome: rows there are kept.
  return pool_->Run<Ok>(kSession, "create keys", [&](MysqlConn& c) -> Result<Ok> {
    for (size_t at = 0; at < keys.size(); at += kListMax) {
      const size_t n = std::min(kListMax, keys.size() - at);
      const size_t padded = PaddedCount(n);
      sql::PreparedStatement& ins = c.List(kInsertMissing, padded);
      for (size_t i = 0; i < padded; ++i) {
        const NewKey& k = keys[at + std::min(i, n - 1)];
        ins.setString(static_cast<unsigned>(3 * i + 1), k.key);
        ins.setInt64(static_cast<unsigned>(3 * i + 2), k.step);
        ins.setString(static_cast<unsigned>(3 * i + 3), d);
      }
      ins.executeUpdate();
    }
    c.Commit();
    return Ok{};
  });
}

namespace {

// REQUIRES: run inside MysqlStore::Run. Reads one row and ends the transaction.
Result<KeyRow> SelectOne(sql::PreparedStatement& sel, const std::string& key,
                         const std::function<void()>& commit) {
  sel.setString(1, key);
  std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
  if (!rs->next()) return MakeError(ErrorCode::kUnknownKey, "no such key");
  KeyRow row = ReadRow(*rs);
  rs.reset();
  commit();
  return row;
}

}  // namespace

Result<KeyRow> MysqlStore::CreateKey(std::string_view key, int64_t step,
                                     std::string_view description) {
  const std::string k(key);
  const std::string d(description);
  // Whether an earlier run of this call inserted the row: it did if its
  // COMMIT succeeded, it may have if the COMMIT's outcome is unknown.
  enum class Inserted { kNo, kMaybe, kYes } inserted = Inserted::kNo;
  return pool_->Run<KeyRow>(kSession, "create key", [&](MysqlConn& c) -> Result<KeyRow> {
    sql::PreparedStatement& ins = c.Stmt(kInsert);
    ins.setString(1, k);
    ins.setInt64(2, step);
    ins.setString(3, d);
    try {
      ins.executeUpdate();
    } catch (const sql::SQLException& e) {
      if (e.getErrorCode() != 1062) throw;
      if (inserted == Inserted::kNo) return MakeError(ErrorCode::kKeyExists, "key exists");
      // A lost COMMIT may have written it: after a maybe, the row is ours if
      // it is still exactly what this call inserted (a twin create is
      // indistinguishable and equally satisfied).
      auto row = SelectOne(c.Stmt(kSelectOne), k, [&] { c.Commit(); });
      if (!row.ok() || inserted == Inserted::kYes) return row;
      if (row->max_id == 1 && row->step == step && row->description == d) return row;
      return MakeError(ErrorCode::kKeyExists, "key exists");
    }
    try {
      c.Commit();
    } catch (...) {
      if (c.CommitOutcomeUnknown()) inserted = Inserted::kMaybe;
      throw;
    }
    inserted = Inserted::kYes;
    return SelectOne(c.Stmt(kSelectOne), k, [&] { c.Commit(); });
  });
}

Result<KeyRow> MysqlStore::GetKey(std::string_view key) {
  const std::string k(key);
  return pool_->Run<KeyRow>(kSession, "get key", [&](MysqlConn& c) -> Result<KeyRow> {
    return SelectOne(c.Stmt(kSelectOne), k, [&] { c.Commit(); });
  });
}

Result<std::vector<KeyRow>> MysqlStore::ListKeys(std::string_view after, size_t limit) {
  const std::string a(after);
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  const auto lim = static_cast<int64_t>(limit < max ? limit : max);
  return pool_->Run<std::vector<KeyRow>>(kSession, "list keys",
                                         [&](MysqlConn& c) -> Result<std::vector<KeyRow>> {
                                           sql::PreparedStatement& sel = c.Stmt(kList);
                                           sel.setString(1, a);
                                           sel.setInt64(2, lim);
                                           std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
                                           std::vector<KeyRow> out;
                                           while (rs->next()) out.push_back(ReadRow(*rs));
                                           rs.reset();
                                           c.Commit();
                                           return out;
                                         });
}

Result<KeyRow> MysqlStore::SetStep(std::string_view key, int64_t step) {
  const std::string k(key);
  return pool_->Run<KeyRow>(kSession, "set step", [&](MysqlConn& c) -> Result<KeyRow> {
    sql::PreparedStatement& upd = c.Stmt(kSetStep);
    upd.setInt64(1, step);
    upd.setString(2, k);
    if (upd.executeUpdate() == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");
    return SelectOne(c.Stmt(kSelectOne), k, [&] { c.Commit(); });
  });
}

Status MysqlStore::Ping() { return pool_->Ping(kSession, kPing); }

Status MysqlStore::Warm() {
  return pool_->Prepare(kSession, [](MysqlConn& c) {
    for (int id : {kReserveBy, kReserveRowStep, kReserveSelect, kFence}) c.Prepare(id);
    for (size_t n : {size_t{2}, size_t{4}}) {
      c.PrepareList(kLockRows, n);
      c.PrepareList(kSetMaxIds, n);
    }
  });
}

}  // namespace seqd
