// MysqlStore's operations on the leaf_alloc table: the schema, its
// statements, reservations (one key, fenced, or a batch), key creation and
// reads. One piece because every operation shares the statement table and
// session below and the same COMMIT discipline (an unknown outcome skips the
// range, never serves it twice); the URL parsing is in mysql_url.cc.
#include "storage/mysql/mysql_store.h"

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "storage/mysql/mysql_key_columns.h"
#include "storage/mysql/mysql_store_sql.h"

namespace seqd {
namespace {

using namespace mysql_leaf;  // the statement ids and batch steps

// How many times a batch is run again in its call when a token it did not
// read turns up at its INSERT (ReserveBatch; the first try reads none).
constexpr int kMaxTokenRaces = 3;

// Leaf's DDL, but for biz_tag: any key of up to 255 bytes, compared byte
// for byte (Leaf's varchar(128) under the table's default collation folds
// case and pads trailing spaces).
constexpr const char* kCreateTable =
    "CREATE TABLE IF NOT EXISTS leaf_alloc ("
    "biz_tag varbinary(255) NOT NULL DEFAULT '', "
    "max_id bigint(20) NOT NULL DEFAULT '1', "
    "step int(11) NOT NULL, "
    "description varchar(256) DEFAULT NULL, "
    "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, "
    "PRIMARY KEY (biz_tag)) ENGINE=InnoDB";

#define SEQD_MYSQL_ROW_COLUMNS \
  "biz_tag, max_id, step, description, UNIX_TIMESTAMP(update_time) * 1000"

const char* const kSql[kNumStmts] = {
    /* kReserveBy */ "UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?",
    /* kReserveRowStep */ "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?",
    /* kReserveSelect */ "SELECT max_id, step, biz_tag FROM leaf_alloc WHERE biz_tag = ?",
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

std::string ListSql(int kind, size_t n) {
  switch (static_cast<ListKind>(kind)) {
    case kLockRows:
      return "SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag IN (" + RepeatSql("?", n) +
             ") ORDER BY biz_tag FOR UPDATE";
    case kSetMaxIds:
      return "UPDATE leaf_alloc SET max_id = CASE biz_tag" + RepeatSql(" WHEN ? THEN ?", n, "") +
             " END WHERE biz_tag IN (" + RepeatSql("?", n) + ")";
    case kMaxIdsIn:
      return "SELECT biz_tag, max_id FROM leaf_alloc WHERE biz_tag IN (" + RepeatSql("?", n) + ")";
    case kMinSeqsIn:
      return "SELECT biz_tag, min_seq FROM seqd_min_seq WHERE biz_tag IN (" + RepeatSql("?", n) +
             ")";
    case kRowTimesIn:
      return "SELECT biz_tag, UNIX_TIMESTAMP(update_time) * 1000 FROM leaf_alloc WHERE biz_tag IN "
             "(" +
             RepeatSql("?", n) + ")";
    case kStampsIn:
      return "SELECT biz_tag, alloc_ms FROM seqd_key_time WHERE biz_tag IN (" + RepeatSql("?", n) +
             ")";
    case kMinSeqsUpsert:
      return "INSERT INTO seqd_min_seq (biz_tag, min_seq) VALUES " + RepeatSql("(?,?)", n) +
             " ON DUPLICATE KEY UPDATE min_seq = VALUES(min_seq)";
  }
  return {};
}

KeyRow ReadRow(sql::ResultSet& rs) {
  KeyRow row;
  row.key = rs.getString(1).asStdString();
  row.max_id = rs.getInt64(2);
  row.step = rs.getInt64(3);
  row.description = rs.isNull(4) ? std::string() : rs.getString(4).asStdString();
  row.update_time_ms = rs.isNull(5) ? 0 : rs.getInt64(5);
  return row;
}

// True if a whole batch failed with kInvalidArgument: a statement the
// batch shares was refused (a key its table cannot hold: KeyDoesNotFitError),
// not one request of it.
bool OneKeyBrokeTheBatch(const std::vector<Result<ReservedSegment>>& results) {
  if (results.size() < 2) return false;
  return std::all_of(results.begin(), results.end(), [](const Result<ReservedSegment>& r) {
    return !r && r.error().code == ErrorCode::kInvalidArgument;
  });
}

}  // namespace

namespace mysql_leaf {

const MysqlSession kSession{kSql, ListSql, ErrorCode::kKeyExists};

}  // namespace mysql_leaf

Status MysqlStore::EnsureSchema() {
  return pool_->Run<Ok>(kSession, "create table", [this](MysqlConn& c) -> Result<Ok> {
    std::unique_ptr<sql::Statement> s(c.conn->createStatement());
    s->execute(kCreateTable);
    s->execute(MinSeqTableSql());
    s->execute(BlockTokenTableSql());
    s->execute(KeyTimeTableSql());
    s->execute(UserSeqTableSql());
    // seqd's own small table, made by an older seqd for ASCII keys: made
    // exact in place (one row per key given a min seq).
    if (!KeyColumnIsExact(c, "seqd_min_seq", "biz_tag")) s->execute(MinSeqTableUpgradeSql());
    exact_tags_.store(KeyColumnIsExact(c, "leaf_alloc", "biz_tag"), std::memory_order_relaxed);
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
  return pool_->Run<ReservedSegment>(
      kSession, "reserve", [&](MysqlConn& c) -> Result<ReservedSegment> {
        const int updated =
            step ? c.Execute(kReserveBy, *step, key) : c.Execute(kReserveRowStep, key);
        if (updated == 0) return MakeError(ErrorCode::kUnknownKey, "no such key");  // rolled back

        std::unique_ptr<sql::ResultSet> rs(c.Stmt(kReserveSelect, key).executeQuery());
        if (!rs->next()) return MakeError(ErrorCode::kInternal, "mysql reserve: row vanished");
        const int64_t max_id = rs->getInt64(1);
        const int64_t table_step = rs->getInt64(2);
        // Under a column that folds case or pads spaces, another key's row.
        if (rs->getString(3).asStdString() != key)
          return KeyFoldsOntoAnotherError();  // rolled back
        rs.reset();
        if (fence) {
          // Last, just before COMMIT: the lease row stays locked only for
          // the commit, so an owner frozen mid-transaction rarely holds it
          // (a takeover's CAS waits for the lock), and never for long (the
          // server ends idle transactions: storage/mysql/mysql_pool.h).
          if (c.Execute(kFence, static_cast<int>(fence->shard), fence->owner, fence->epoch) == 0) {
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

std::vector<Result<ReservedSegment>> MysqlStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  std::vector<Result<ReservedSegment>> out(
      requests.size(), MakeError(ErrorCode::kInternal, "mysql reserve many: not answered"));
  ReserveEach(requests, [&](size_t i, Result<ReservedSegment> r) { out[i] = std::move(r); });
  return out;
}

void MysqlStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                             const ReserveLanded& landed) {
  if (requests.size() == 1) return landed(0, ReserveOne(requests[0]));
  if (requests.empty()) return;
  if (auto all = ReserveBatch(requests, kBatchLockWaitS)) {
    if (!OneKeyBrokeTheBatch(*all)) {
      for (size_t i = 0; i < all->size(); ++i) landed(i, std::move((*all)[i]));
      return;
    }
    // A key the table cannot hold failed the batch's statements (a table
    // made before keys were any UTF-8): each request alone, so only that
    // key is refused.
    for (size_t i = 0; i < requests.size(); ++i) landed(i, ReserveOne(requests[i]));
    return;
  }
  // A row stayed locked: the batch was rolled back. Each request alone,
  // not waiting for a lock (a healthy holder's lock is seldom met twice),
  // so the free ones are answered now; then the locked ones, one at a time.
  ProcessStoreStats().batch_lock_timeouts.fetch_add(1, std::memory_order_relaxed);
  // A key named again after its row was found locked waits with it (its
  // ranges stay in request order).
  std::vector<size_t> locked;
  std::set<std::string_view> locked_keys;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string_view key = requests[i].key;
    if (!locked_keys.count(key)) {
      if (auto one = ReserveBatch({requests[i]}, 0)) {
        landed(i, std::move(one->front()));
        continue;
      }
    }
    locked.push_back(i);
    locked_keys.insert(key);
  }
  for (size_t i : locked) landed(i, ReserveOne(requests[i]));
}

Result<ReservedSegment> MysqlStore::ReserveOne(const ReserveRequest& r) {
  if (r.create_step <= 0 && r.token.empty() && !r.stamp_time) {
    return ReserveImpl(r.key, r.step, r.fence ? &*r.fence : nullptr);
  }
  return std::move(ReserveBatch({r}, std::nullopt)->front());  // never nullopt without a wait
}

std::optional<std::vector<Result<ReservedSegment>>> MysqlStore::ReserveBatch(
    const std::vector<ReserveRequest>& requests, std::optional<int> lock_wait_s) {
  using Results = std::vector<Result<ReservedSegment>>;
  const bool exact_tags = exact_tags_.load(std::memory_order_relaxed);
  const std::vector<bool> at_once = OneStatementRequests(requests, exact_tags);
  // One transaction: the rows created first, then reserved.
  Result<std::optional<Results>> result = pool_->Run<std::optional<Results>>(
      kSession, "reserve many",
      [&](MysqlConn& c) -> Result<std::optional<Results>> {
        Slots slots(requests.size());
        for (int token_races = 0;; ++token_races) {
          slots.assign(requests.size(), std::nullopt);
          try {
            CreateMissingRows(c, requests, at_once);
            CreateAndReserve(c, requests, at_once, slots);
            // The first try takes every token for a new one (ReserveRows).
            ReserveRows(c, requests, at_once, slots, /*read_tokens=*/token_races > 0, exact_tags);
            break;
          } catch (const sql::SQLException& e) {
            // A token recorded before: the first try did not read the
            // tokens, or one was committed by a transaction this one could
            // not see when it read them (the same request sent again while
            // its first try committed: on Galera, through another node).
            // Nothing of this one is kept; the next try replays it.
            if (e.getErrorCode() == kMysqlErrDupKey && token_races < kMaxTokenRaces) {
              if (token_races > 0) {  // read, and still not seen: a race
                ProcessStoreStats().conflicts.fetch_add(1, std::memory_order_relaxed);
              }
              c.Rollback();
              continue;
            }
            if (!lock_wait_s || e.getErrorCode() != kMysqlErrLockWaitTimeout) throw;
            // The timeout undid its statement only: the rest goes too (a
            // failed ROLLBACK throws; the pool then closes the connection,
            // which ends the transaction). Nothing of it is served.
            c.Rollback();
            return std::optional<Results>();
          }
        }
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
        return std::optional<Results>(std::move(out));
      },
      lock_wait_s);
  if (!result) return Results(requests.size(), result.error());
  return std::move(*result);
}

Status MysqlStore::CreateKeys(const std::vector<NewKey>& unsorted, std::string_view description) {
  // Inserted in key order: two batches never wait for each other in a cycle.
  std::vector<ReserveRequest> rows;
  rows.reserve(unsorted.size());
  for (const NewKey& k : unsorted) rows.push_back({k.key, {}, {}, k.step, description});
  std::vector<const ReserveRequest*> sorted;
  for (const ReserveRequest& r : rows) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->key < b->key; });
  // Safe to run again after a COMMIT with an unknown outcome: rows there are kept.
  auto insert = [&](std::span<const ReserveRequest* const> keys) {
    return pool_->Run<Ok>(kSession, "create keys", [&](MysqlConn& c) -> Result<Ok> {
      for (size_t at = 0; at < keys.size(); at += kListMax) {
        const size_t n = std::min(kListMax, keys.size() - at);
        InsertNewRows(c, NewRows::kCreate, keys.subspan(at, n));
      }
      c.Commit();
      return Ok{};
    });
  };
  Status all = insert(sorted);
  if (all || all.error().code != ErrorCode::kInvalidArgument || sorted.size() == 1) return all;
  // A key the table cannot hold failed the statement: the others one by
  // one; that key is refused when it is reserved.
  for (const ReserveRequest* r : sorted) {
    if (Status one = insert(std::span(&r, 1));
        !one && one.error().code != ErrorCode::kInvalidArgument) {
      return one;
    }
  }
  return OkStatus();
}

namespace {

// REQUIRES: run inside MysqlStore::Run. Reads one row and ends the
// transaction; another key's row (under a column that folds case or pads
// spaces) is no row, and the transaction is then left to roll back.
Result<KeyRow> SelectOne(MysqlConn& c, std::string_view key) {
  std::optional<KeyRow> row = c.QueryRow(kSelectOne, ReadRow, key);
  if (!row || row->key != key) return MakeError(ErrorCode::kUnknownKey, "no such key");
  c.Commit();
  return *row;
}

}  // namespace

Result<KeyRow> MysqlStore::CreateKey(std::string_view key, int64_t step,
                                     std::string_view description) {
  // Whether an earlier run of this call inserted the row: it did if its
  // COMMIT succeeded, it may have if the COMMIT's outcome is unknown.
  enum class Inserted { kNo, kMaybe, kYes } inserted = Inserted::kNo;
  return pool_->Run<KeyRow>(kSession, "create key", [&](MysqlConn& c) -> Result<KeyRow> {
    try {
      c.Execute(kInsert, key, step, description);
      if (auto refused = guard_.Admit(c, key)) return *refused;
    } catch (const sql::SQLException& e) {
      if (e.getErrorCode() != 1062) throw;
      if (inserted == Inserted::kNo) {
        // Under a column that folds case or pads spaces, maybe another key's row.
        auto row = SelectOne(c, key);
        if (!row.ok()) return KeyFoldsOntoAnotherError();
        return MakeError(ErrorCode::kKeyExists, "key exists");
      }
      // A lost COMMIT may have written it: after a maybe, the row is ours if
      // it is still exactly what this call inserted (a twin create is
      // indistinguishable and equally satisfied).
      auto row = SelectOne(c, key);
      if (!row.ok() || inserted == Inserted::kYes) return row;
      if (row->max_id == 1 && row->step == step && row->description == description) return row;
      return MakeError(ErrorCode::kKeyExists, "key exists");
    }
    try {
      c.Commit();
    } catch (...) {
      if (c.CommitOutcomeUnknown()) inserted = Inserted::kMaybe;
      throw;
    }
    inserted = Inserted::kYes;
    return SelectOne(c, key);
  });
}

Result<KeyRow> MysqlStore::GetKey(std::string_view key) {
  return guard_.Read<KeyRow>(*pool_, kSession, "get key", key,
                             [&](MysqlConn& c) -> Result<KeyRow> { return SelectOne(c, key); });
}

Result<std::vector<KeyRow>> MysqlStore::ListKeys(std::string_view after, size_t limit) {
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  const auto lim = static_cast<int64_t>(limit < max ? limit : max);
  return guard_.ReadListed<std::vector<KeyRow>>(
      *pool_, kSession, "list keys",
      [&](MysqlConn& c) -> Result<std::vector<KeyRow>> {
        return c.QueryRows(kList, ReadRow, after, lim);
      },
      [](const std::vector<KeyRow>& rows) {
        std::vector<std::string> keys;
        keys.reserve(rows.size());
        for (const KeyRow& row : rows) keys.push_back(row.key);
        return keys;
      });
}

Result<KeyRow> MysqlStore::SetStep(std::string_view key, int64_t step) {
  return pool_->Run<KeyRow>(kSession, "set step", [&](MysqlConn& c) -> Result<KeyRow> {
    const bool found = c.Execute(kSetStep, step, key) > 0;
    // A key missing from a group its shard has left may be in the new one:
    // the guard's answer (retry) comes first.
    if (auto refused = guard_.Admit(c, key)) return *refused;
    if (!found) return MakeError(ErrorCode::kUnknownKey, "no such key");
    return SelectOne(c, key);
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
