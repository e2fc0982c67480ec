#include "storage/sqlite/sqlite_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/unix_millis.h"

namespace seqd {
namespace {

constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS leaf_alloc ("
    "biz_tag VARCHAR(128) PRIMARY KEY, "
    "max_id BIGINT NOT NULL DEFAULT 1, "
    "step INT NOT NULL, "
    "description VARCHAR(256) DEFAULT NULL, "
    "update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP);"
    // OpenIM's per-key min seq, beside (never in) Leaf's table.
    "CREATE TABLE IF NOT EXISTS seqd_min_seq ("
    "biz_tag VARCHAR(128) PRIMARY KEY, "
    "min_seq BIGINT NOT NULL);"
    // Blocks recorded under client tokens (ReserveRequest::token).
    "CREATE TABLE IF NOT EXISTS seqd_block_token ("
    "biz_tag VARCHAR(128) NOT NULL, "
    "token VARCHAR(64) NOT NULL, "
    "first_id BIGINT NOT NULL, "
    "last_id BIGINT NOT NULL, "
    "created_ms BIGINT NOT NULL, "
    "PRIMARY KEY (biz_tag, token)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS seqd_block_token_created ON seqd_block_token (created_ms);"
    // Each key's last stamped reservation (ReserveRequest::stamp_time).
    "CREATE TABLE IF NOT EXISTS seqd_key_time ("
    "biz_tag VARCHAR(255) PRIMARY KEY, "
    "alloc_ms BIGINT NOT NULL) WITHOUT ROWID;"
    // OpenIM's per-user seqs (SegmentStore::GetUserSeqs, SetUserSeqs).
    "CREATE TABLE IF NOT EXISTS seqd_user_seq ("
    "user_id VARCHAR(255) NOT NULL, "
    "conv VARCHAR(255) NOT NULL, "
    "min_seq BIGINT NOT NULL DEFAULT 0, "
    "max_seq BIGINT NOT NULL DEFAULT 0, "
    "read_seq BIGINT NOT NULL DEFAULT 0, "
    "PRIMARY KEY (user_id, conv)) WITHOUT ROWID";

// Same text format as CURRENT_TIMESTAMP, with milliseconds, in UTC.
#define SEQD_SQLITE_NOW "strftime('%Y-%m-%d %H:%M:%f', 'now')"
// update_time as unix millis; NULL (read as 0) if it does not parse.
#define SEQD_SQLITE_ROW_COLUMNS          \
  "biz_tag, max_id, step, description, " \
  "CAST(ROUND((julianday(update_time) - 2440587.5) * 86400000.0) AS INTEGER)"

enum StmtId {
  kReserveUpdate,
  kReserveSelect,
  kInsert,
  kInsertIfAbsent,
  kSelectOne,
  kList,
  kSetStep,
  kPing,
  kMinSeqSelect,
  kMinSeqUpsert,
  kReserveReturning,
  kCreateOrReserve,
  kTokenSelect,
  kTokenInsert,
  kTokenPrune,
  kKeyTimeUpsert,
  kAllocTimeSelect,
  kUserSeqSelect,
  kUserSeqUpsert,
  kNumFixedStmts,
  // Then kInsertNewRows + i: new rows, 2^i per statement (NewRowsSql).
  kInsertNewRows = kNumFixedStmts,
};

// New rows per multi-row INSERT: 1, 2, 4, ... up to 2^(kNewRowsSizes - 1)
// (256 rows, 1,025 parameters: far below SQLite's 32,766).
constexpr int kNewRowsSizes = 9;

const char* const kFixedSql[kNumFixedStmts] = {
    /* kReserveUpdate */
    "UPDATE leaf_alloc SET max_id = max_id + COALESCE(?1, step), update_time = " SEQD_SQLITE_NOW
    " WHERE biz_tag = ?2",
    /* kReserveSelect */ "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?1",
    /* kInsert */
    "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) "
    "VALUES (?1, 1, ?2, ?3, " SEQD_SQLITE_NOW ")",
    /* kInsertIfAbsent */
    "INSERT OR IGNORE INTO leaf_alloc (biz_tag, max_id, step, description, update_time) "
    "VALUES (?1, 1, ?2, ?3, " SEQD_SQLITE_NOW ")",
    /* kSelectOne */ "SELECT " SEQD_SQLITE_ROW_COLUMNS " FROM leaf_alloc WHERE biz_tag = ?1",
    /* kList */
    "SELECT " SEQD_SQLITE_ROW_COLUMNS
    " FROM leaf_alloc WHERE biz_tag > ?1 ORDER BY biz_tag LIMIT ?2",
    /* kSetStep */
    "UPDATE leaf_alloc SET step = ?1, update_time = " SEQD_SQLITE_NOW " WHERE biz_tag = ?2",
    /* kPing */ "PRAGMA schema_version",
    /* kMinSeqSelect */ "SELECT min_seq FROM seqd_min_seq WHERE biz_tag = ?1",
    /* kMinSeqUpsert */
    "INSERT INTO seqd_min_seq (biz_tag, min_seq) VALUES (?1, ?2) "
    "ON CONFLICT(biz_tag) DO UPDATE SET min_seq = excluded.min_seq",
    // The batch's statements: one per key, the row's new max_id and step
    // back; ?5 is the batch's time (BatchTime: strftime per row cost a few
    // percent of a new-key storm). No row back: no such key, or no room below INT64_MAX (the
    // row is left as it is).
    /* kReserveReturning */
    "UPDATE leaf_alloc SET max_id = max_id + COALESCE(?2, step), update_time = ?5"
    " WHERE biz_tag = ?1 AND max_id <= 9223372036854775807 - COALESCE(?2, step)"
    " RETURNING max_id, step",
    /* kCreateOrReserve: a new row starts at 1 and gives its first segment
       at once; a row already there gives its next one. */
    "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) "
    "VALUES (?1, 1 + COALESCE(?2, ?3), ?3, ?4, ?5) "
    "ON CONFLICT(biz_tag) DO UPDATE SET max_id = max_id + COALESCE(?2, step), update_time = ?5"
    " WHERE max_id <= 9223372036854775807 - COALESCE(?2, step)"
    " RETURNING max_id, step",
    /* kTokenSelect */
    "SELECT first_id, last_id FROM seqd_block_token WHERE biz_tag = ?1 AND token = ?2",
    /* kTokenInsert */
    "INSERT INTO seqd_block_token (biz_tag, token, first_id, last_id, created_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5)",
    /* kTokenPrune */ "DELETE FROM seqd_block_token WHERE created_ms < ?1",
    /* kKeyTimeUpsert */
    "INSERT INTO seqd_key_time (biz_tag, alloc_ms) VALUES (?1, ?2) "
    "ON CONFLICT(biz_tag) DO UPDATE SET alloc_ms = MAX(alloc_ms, excluded.alloc_ms)",
    /* kAllocTimeSelect: the stamped time, else the row's update_time */
    "SELECT COALESCE(t.alloc_ms, "
    "CAST(ROUND((julianday(a.update_time) - 2440587.5) * 86400000.0) AS INTEGER), 0) "
    "FROM leaf_alloc a LEFT JOIN seqd_key_time t ON t.biz_tag = a.biz_tag WHERE a.biz_tag = ?1",
    /* kUserSeqSelect */
    "SELECT min_seq, max_seq, read_seq FROM seqd_user_seq WHERE user_id = ?1 AND conv = ?2",
    /* kUserSeqUpsert: ?3 the field (1 min, 2 max, 3 read), ?4 the value,
       ?5 1 to raise only */
    "INSERT INTO seqd_user_seq (user_id, conv, min_seq, max_seq, read_seq) VALUES (?1, ?2, "
    "CASE ?3 WHEN 1 THEN ?4 ELSE 0 END, CASE ?3 WHEN 2 THEN ?4 ELSE 0 END, "
    "CASE ?3 WHEN 3 THEN ?4 ELSE 0 END) "
    "ON CONFLICT(user_id, conv) DO UPDATE SET "
    "min_seq = CASE ?3 WHEN 1 THEN (CASE WHEN ?5 THEN MAX(min_seq, ?4) ELSE ?4 END) ELSE min_seq END, "
    "max_seq = CASE ?3 WHEN 2 THEN (CASE WHEN ?5 THEN MAX(max_seq, ?4) ELSE ?4 END) ELSE max_seq END, "
    "read_seq = CASE ?3 WHEN 3 THEN (CASE WHEN ?5 THEN MAX(read_seq, ?4) ELSE ?4 END) ELSE read_seq END",
};

// `rows` new rows with their first segments, each given as (key, max_id
// after the segment, step, description) from ?2 on; ?1 the batch's time. A
// key whose row exists is left alone and not returned.
std::string NewRowsSql(size_t rows) {
  std::string sql =
      "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) VALUES ";
  for (size_t i = 0; i < rows; ++i) {
    const size_t p = 2 + 4 * i;
    sql += (i ? ",(?" : "(?") + std::to_string(p) + ",?" + std::to_string(p + 1) + ",?" +
           std::to_string(p + 2) + ",?" + std::to_string(p + 3) + ",?1)";
  }
  return sql + " ON CONFLICT(biz_tag) DO NOTHING RETURNING biz_tag, max_id, step";
}

// The statements by StmtId: the fixed ones, then the generated ones. Built
// once; lives for the program.
std::span<const char* const> StoreSql() {
  static const std::vector<std::string> generated = [] {
    std::vector<std::string> out;
    for (int i = 0; i < kNewRowsSizes; ++i) out.push_back(NewRowsSql(size_t{1} << i));
    return out;
  }();
  static const std::vector<const char*> table = [] {
    std::vector<const char*> out(std::begin(kFixedSql), std::end(kFixedSql));
    for (const std::string& sql : generated) out.push_back(sql.c_str());
    return out;
  }();
  return table;
}

// Now as SEQD_SQLITE_NOW writes it ("2026-11-28 05:57:00.123", UTC): one
// time for a whole batch.
std::string BatchTime() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) %
                  std::chrono::seconds(1);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03d", static_cast<int>(ms.count()));
  return text;
}

KeyRow ReadRow(sqlite3_stmt* s) {
  KeyRow row;
  row.key = SqliteColumnText(s, 0);
  row.max_id = sqlite3_column_int64(s, 1);
  row.step = sqlite3_column_int64(s, 2);
  row.description = SqliteColumnText(s, 3);
  row.update_time_ms = sqlite3_column_int64(s, 4);
  return row;
}

// A row's max_id and step as a reservation left them. SQLite silently turns
// an integer sum past INT64_MAX into a REAL: `overflowed`.
struct AdvancedRow {
  int64_t max_id = 0;
  int64_t step = 0;
  bool overflowed = false;
};

AdvancedRow ReadAdvanced(sqlite3_stmt* s) {
  return AdvancedRow{sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                     sqlite3_column_type(s, 0) != SQLITE_INTEGER};
}

// One value per key of `keys`, in their order: `value(db, key)`, or
// `missing` for a key without one. Fails at the first error.
template <typename Value>
Result<std::vector<int64_t>> PerKey(SqliteDb& db, const std::vector<std::string>& keys,
                                    int64_t missing, Value value) {
  std::vector<int64_t> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    Result<std::optional<int64_t>> v = value(db, k);
    if (!v.ok()) return v.error();
    out.push_back(v->value_or(missing));
  }
  return out;
}

}  // namespace

SqliteStore::SqliteStore(std::string path)
    : SqliteStoreBase(std::move(path), StoreSql(), kCreateTable, "create table") {}

Result<ReservedSegment> SqliteStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  if (step && *step <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "sqlite reserve: step must be > 0");
  }
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "reserve");
  if (Status st = txn.Begin(); !st.ok()) return st.error();
  // ?1 the step asked for (NULL: the row's own).
  if (Status st = db_.Exec(kReserveUpdate, "reserve (update)", step, key); !st.ok()) {
    return st.error();
  }
  if (db_.Changes() == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");
  Result<std::optional<AdvancedRow>> row =
      db_.QueryRow(kReserveSelect, "reserve (select)", ReadAdvanced, key);
  if (!row.ok()) return row.error();
  if (!*row) return MakeError(ErrorCode::kInternal, "sqlite reserve (select): row vanished");
  if ((*row)->overflowed) return MakeError(ErrorCode::kInternal, "sqlite reserve: max_id overflow");
  if (Status st = txn.Commit(); !st.ok()) return st.error();
  const int64_t by = step.value_or((*row)->step);
  return ReservedSegment{(*row)->max_id - by, (*row)->max_id - 1, (*row)->step};
}

std::vector<Result<ReservedSegment>> SqliteStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  auto fail_all = [&](const Error& e) {
    return std::vector<Result<ReservedSegment>>(requests.size(), e);
  };
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "reserve many");
  if (Status st = txn.Begin(); !st.ok()) return fail_all(st.error());
  const std::string now = BatchTime();
  std::vector<std::optional<ReservedSegment>> created(requests.size());
  if (Status st = InsertNewRowsLocked(requests, now, created); !st.ok()) {
    return fail_all(st.error());
  }
  std::vector<Result<ReservedSegment>> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (created[i]) {
      out.push_back(*created[i]);
    } else if (Status st = ReserveOneLocked(requests[i], now, out); !st.ok()) {
      return fail_all(st.error());
    }
  }
  if (Status st = StampTimesLocked(requests, out); !st.ok()) return fail_all(st.error());
  if (Status st = txn.Commit(); !st.ok()) return fail_all(st.error());
  return out;
}

Status SqliteStore::StampTimesLocked(const std::vector<ReserveRequest>& requests,
                                     const std::vector<Result<ReservedSegment>>& out) {
  const int64_t now_ms = UnixMillisNow();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].stamp_time || !out[i] || out[i]->replayed) continue;
    Status st = db_.Exec(kKeyTimeUpsert, "reserve many (time)", requests[i].key, now_ms);
    if (!st.ok()) return st;
  }
  return OkStatus();
}

Status SqliteStore::InsertNewRowsLocked(const std::vector<ReserveRequest>& requests,
                                        const std::string& now,
                                        std::vector<std::optional<ReservedSegment>>& created) {
  std::unordered_map<std::string_view, int> asked;  // create requests per key
  for (const ReserveRequest& r : requests) {
    if (r.create_step > 0) ++asked[r.key];
  }
  std::vector<size_t> picked;  // the requests this may serve, in order
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReserveRequest& r = requests[i];
    const int64_t by = r.step.value_or(r.create_step);
    if (r.create_step > 0 && !r.fence && r.token.empty() && by > 0 &&
        by < std::numeric_limits<int64_t>::max() && asked[r.key] == 1) {
      picked.push_back(i);
    }
  }
  std::unordered_map<std::string_view, size_t> by_key;  // a statement's rows
  for (size_t at = 0; at < picked.size();) {
    int size = kNewRowsSizes - 1;  // the largest statement that the rest fills
    while ((size_t{1} << size) > picked.size() - at) --size;
    const size_t rows = size_t{1} << size;
    auto stmt = db_.Stmt(kInsertNewRows + size, "reserve many (new rows)");
    if (!stmt.ok()) return stmt.error();
    SqliteResetOnExit reset(*stmt);
    SqliteBind(*stmt, 1, now);
    by_key.clear();
    for (size_t j = 0; j < rows; ++j) {
      const size_t i = picked[at + j];
      const ReserveRequest& r = requests[i];
      const int p = 2 + 4 * static_cast<int>(j);
      SqliteBind(*stmt, p, r.key);
      sqlite3_bind_int64(*stmt, p + 1, 1 + r.step.value_or(r.create_step));
      sqlite3_bind_int64(*stmt, p + 2, r.create_step);
      SqliteBind(*stmt, p + 3, r.create_description);
      by_key.emplace(r.key, i);
    }
    int rc;
    while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(*stmt, 0));
      const std::string_view key(text ? text : "",
                                 static_cast<size_t>(sqlite3_column_bytes(*stmt, 0)));
      const auto it = by_key.find(key);
      if (it == by_key.end()) {
        return MakeError(ErrorCode::kInternal, "sqlite reserve: a new row nobody asked for");
      }
      const int64_t max_id = sqlite3_column_int64(*stmt, 1);
      const int64_t step = sqlite3_column_int64(*stmt, 2);
      const int64_t by = requests[it->second].step.value_or(step);
      created[it->second] = ReservedSegment{max_id - by, max_id - 1, step};
    }
    if (rc != SQLITE_DONE) return db_.SqlError(rc, "reserve many (new rows)");
    at += rows;
  }
  return OkStatus();
}

Status SqliteStore::ReserveOneLocked(const ReserveRequest& r, const std::string& now,
                                     std::vector<Result<ReservedSegment>>& out) {
  if (r.fence) {
    out.push_back(NoClusterMode());
    return OkStatus();
  }
  if (r.step && *r.step <= 0) {
    out.push_back(MakeError(ErrorCode::kInvalidArgument, "sqlite reserve: step must be > 0"));
    return OkStatus();
  }
  if (!r.token.empty()) return ReserveTokenedLocked(r, now, out);
  return ReserveRowLocked(r, now, out);
}

Status SqliteStore::ReserveTokenedLocked(const ReserveRequest& r, const std::string& now,
                                         std::vector<Result<ReservedSegment>>& out) {
  if (!r.step) {
    out.push_back(MakeError(ErrorCode::kInvalidArgument, "a token needs a count"));
    return OkStatus();
  }
  auto read_range = [](sqlite3_stmt* s) {
    return ReservedSegment{sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), 0, true};
  };
  Result<std::optional<ReservedSegment>> recorded =
      db_.QueryRow(kTokenSelect, "reserve many (token)", read_range, r.key, r.token);
  if (!recorded.ok()) return recorded.error();
  if (const std::optional<ReservedSegment>& range = *recorded) {
    if (range->last - range->first + 1 != *r.step) {
      out.push_back(
          MakeError(ErrorCode::kInvalidArgument, "token already used with another count"));
    } else {
      out.push_back(*range);
    }
    return OkStatus();
  }
  if (Status st = ReserveRowLocked(r, now, out); !st.ok()) return st;
  if (!out.back()) return OkStatus();
  return db_.Exec(kTokenInsert, "reserve many (token insert)", r.key, r.token, out.back()->first,
                  out.back()->last, UnixMillisNow());
}

Status SqliteStore::ReserveRowLocked(const ReserveRequest& r, const std::string& now,
                                     std::vector<Result<ReservedSegment>>& out) {
  // One statement: it creates the row if asked (in this transaction) and
  // advances it, returning the new max_id and step. Both statements: ?1 the
  // key, ?2 the step asked for (NULL: the row's), ?5 the batch's time; ?3
  // and ?4, the new row's step and description, only kCreateOrReserve reads.
  const bool create = r.create_step > 0;
  Result<std::optional<AdvancedRow>> row =
      db_.QueryRow(create ? kCreateOrReserve : kReserveReturning,
                   create ? "reserve many (create)" : "reserve many (update)", ReadAdvanced, r.key,
                   r.step, r.create_step, r.create_description, now);
  if (!row.ok()) return row.error();
  if (!*row) {  // no row changed: which reason?
    Result<std::optional<AdvancedRow>> there =
        db_.QueryRow(kReserveSelect, "reserve many (select)", ReadAdvanced, r.key);
    if (!there.ok()) return there.error();
    out.push_back(*there ? MakeError(ErrorCode::kInternal, "sqlite reserve: max_id overflow")
                         : MakeError(ErrorCode::kUnknownKey, "no such key"));
    return OkStatus();
  }
  // A new row's 1 + step past INT64_MAX becomes a REAL: refuse the batch.
  if ((*row)->overflowed) return MakeError(ErrorCode::kInternal, "sqlite reserve: max_id overflow");
  const int64_t by = r.step.value_or((*row)->step);
  out.push_back(ReservedSegment{(*row)->max_id - by, (*row)->max_id - 1, (*row)->step});
  return OkStatus();
}

Status SqliteStore::CreateKeys(const std::vector<NewKey>& keys, std::string_view description) {
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "create keys");
  if (Status st = txn.Begin(); !st.ok()) return st;
  for (const NewKey& k : keys) {
    if (Status st = db_.Exec(kInsertIfAbsent, "create keys", k.key, k.step, description);
        !st.ok()) {
      return st;
    }
  }
  return txn.Commit();
}

Result<KeyRow> SqliteStore::SelectOneLocked(std::string_view key, const char* op) {
  Result<std::optional<KeyRow>> row = db_.QueryRow(kSelectOne, op, ReadRow, key);
  if (!row.ok()) return row.error();
  if (!*row) return MakeError(ErrorCode::kUnknownKey, "no such key");
  return std::move(**row);
}

Result<KeyRow> SqliteStore::CreateKey(std::string_view key, int64_t step,
                                      std::string_view description) {
  MutexLock lock(mu_);
  {
    auto s = db_.Stmt(kInsert, "create key", key, step, description);
    if (!s.ok()) return s.error();
    SqliteResetOnExit reset(*s);
    int rc = sqlite3_step(*s);
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
      return MakeError(ErrorCode::kKeyExists, "key exists");
    }
    if (rc != SQLITE_DONE) return db_.SqlError(rc, "create key");
  }
  return SelectOneLocked(key, "create key (select)");
}

Result<KeyRow> SqliteStore::GetKey(std::string_view key) {
  MutexLock lock(mu_);
  return SelectOneLocked(key, "get key");
}

Result<std::vector<KeyRow>> SqliteStore::ListKeys(std::string_view after, size_t limit) {
  MutexLock lock(mu_);
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  const auto lim = static_cast<int64_t>(limit < max ? limit : max);
  return db_.QueryRows(kList, "list keys", ReadRow, after, lim);
}

Result<KeyRow> SqliteStore::SetStep(std::string_view key, int64_t step) {
  MutexLock lock(mu_);
  if (Status st = db_.Exec(kSetStep, "set step", step, key); !st.ok()) return st.error();
  if (db_.Changes() == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");
  return SelectOneLocked(key, "set step (select)");
}

Result<std::vector<int64_t>> SqliteStore::GetAllocTimes(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  return PerKey(db_, keys, -1, [](SqliteDb& db, const std::string& k) {
    return db.QueryInt64(kAllocTimeSelect, "get allocation times", k);
  });
}

Result<std::vector<int64_t>> SqliteStore::GetUserSeqs(std::string_view user, UserSeqField field,
                                                      const std::vector<std::string>& convs) {
  const int column = static_cast<int>(field) - 1;
  auto read = [column](sqlite3_stmt* s) { return SqliteColumnInt64(s, column); };
  MutexLock lock(mu_);
  return PerKey(db_, convs, 0, [&](SqliteDb& db, const std::string& conv) {
    return db.QueryRow(kUserSeqSelect, "get user seqs", read, user, conv);
  });
}

Status SqliteStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                const std::vector<UserSeqValue>& values) {
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "set user seqs");
  if (Status st = txn.Begin(); !st.ok()) return st;
  for (const UserSeqValue& v : values) {
    Status st = db_.Exec(kUserSeqUpsert, "set user seqs", user, v.conv, static_cast<int>(field),
                         v.seq, raise_only ? 1 : 0);
    if (!st.ok()) return st;
  }
  return txn.Commit();
}

Result<std::vector<int64_t>> SqliteStore::GetMinSeqs(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  return PerKey(db_, keys, 0, [](SqliteDb& db, const std::string& k) {
    return db.QueryInt64(kMinSeqSelect, "get min seqs", k);
  });
}

Status SqliteStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                               const std::vector<ShardFence>& fences, uint32_t* refused_shard) {
  (void)refused_shard;
  if (!fences.empty()) return NoClusterMode();
  MutexLock lock(mu_);
  SqliteTransaction txn(db_, "set min seqs");
  if (Status st = txn.Begin(); !st.ok()) return st;
  for (const MinSeqValue& v : values) {
    if (Status st = db_.Exec(kMinSeqUpsert, "set min seqs", v.key, v.min_seq); !st.ok()) return st;
  }
  return txn.Commit();
}

Result<int64_t> SqliteStore::PruneBlockTokens(int64_t before_unix_ms) {
  MutexLock lock(mu_);
  if (Status st = db_.Exec(kTokenPrune, "prune tokens", before_unix_ms); !st.ok()) {
    return st.error();
  }
  return static_cast<int64_t>(db_.Changes());
}

Status SqliteStore::Ping() {
  MutexLock lock(mu_);
  return db_.Exec(kPing, "ping");
}

}  // namespace seqd
