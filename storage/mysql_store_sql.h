// MysqlStore's SQL, shared by its files (mysql_store.cc: the single-key
// calls, creation and reads; mysql_reserve_many.cc: batches). Internal to
// storage/: the statement ids of MysqlStore's session table, the kinds of its
// count-dependent statements, and the batch steps ReserveMany runs in one
// transaction.
#pragma once

#include <bit>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/mysql_pool.h"
#include "storage/segment_store.h"

namespace seqd::mysql_leaf {

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
  // the row's own step (an overflow fails the statement: error 1690). A row
  // with max_id 0 is padding (the last item again): it changes nothing.
  kCreateReserving,
  // The same, leaving a row unchanged where advancing it would overflow.
  kCreateReservingGuarded,
};

// ER_DATA_OUT_OF_RANGE: BIGINT overflow (kCreateReserving).
constexpr int kErrOutOfRange = 1690;
// ER_LOCK_WAIT_TIMEOUT: a statement waited too long for a row lock.
constexpr int kErrLockWaitTimeout = 1205;

// Items per list statement at most; a batch beyond it takes several.
constexpr size_t kListMax = 1024;

inline size_t PaddedCount(size_t n) { return std::bit_ceil(n); }

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ReserveMany's steps, in this order in its transaction, each on its share
// of `requests`: out[i] is set for every request a step serves.
using Slots = std::vector<std::optional<Result<ReservedSegment>>>;
std::vector<bool> OneStatementRequests(const std::vector<ReserveRequest>& requests);
void CreateMissingRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                       const std::vector<bool>& at_once);
void CreateAndReserve(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                      const std::vector<bool>& at_once, Slots& out);
void ReserveRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                 const std::vector<bool>& at_once, Slots& out);

}  // namespace seqd::mysql_leaf
