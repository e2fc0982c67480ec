// MysqlStore's SQL, shared by its files (mysql_store.cc: the statement
// table, the single-key calls, creation and reads; mysql_reserve_many.cc:
// batches; the side tables' files). Internal to storage/: the statement ids
// of MysqlStore's session table, the kinds of its count-dependent
// statements, and the batch steps ReserveMany runs in one transaction.
#pragma once

#include <bit>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/mysql/mysql_errors.h"
#include "storage/mysql/mysql_pool.h"
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
  // Each reads (biz_tag, value) of the rows of its keys: max_id
  // (GetMaxIds), min_seq (seqd_min_seq), update_time in unix millis, and
  // alloc_ms (seqd_key_time).
  kMaxIdsIn,
  kMinSeqsIn,
  kRowTimesIn,
  kStampsIn,
  // Sets min_seq of keys (biz_tag, min_seq), creating their rows.
  kMinSeqsUpsert,
};

// MysqlStore's statements, for all its files. A duplicate key escaping a
// call can only be a key that exists (kKeyExists).
extern const MysqlSession kSession;

// ER_DATA_OUT_OF_RANGE: BIGINT overflow (CreateAndReserve's INSERT).
constexpr int kErrOutOfRange = 1690;

// Items per list statement (and rows per INSERT) at most; a batch beyond it
// takes several.
constexpr size_t kListMax = 1024;

inline size_t PaddedCount(size_t n) { return std::bit_ceil(n); }

// The rows are text (MysqlConn::Update), in their number: binding a prepared
// statement padded to a power of two cost seqd more CPU per new key than
// the server's parsing of the text (bench/new_keys_bench.sh).
enum class NewRows {
  // Rows created with max_id 1, unless present (left as they are).
  kCreate,
  // Rows created with max_id = 1 + step (their first segment, [1, step],
  // reserved), or, for a row already there, max_id advanced by the row's own
  // step (an overflow fails the statement: kErrOutOfRange).
  kCreateReserving,
  // The same, leaving a row unchanged where advancing it would overflow.
  kCreateReservingGuarded,
};

// REQUIRES: 1 <= rows.size() <= kListMax; each row has create_step > 0.
// Runs the INSERT of `rows` (key, create_step, create_description) and
// returns its affected-rows count (the pool's connections set
// CLIENT_FOUND_ROWS: 1 for a new row or one left as it was, 2 for an
// advanced one).
int InsertNewRows(MysqlConn& c, NewRows what, std::span<const ReserveRequest* const> rows);

// ReserveMany's steps, in this order in its transaction, each on its share
// of `requests`: out[i] is set for every request a step serves.
using Slots = std::vector<std::optional<Result<ReservedSegment>>>;
std::vector<bool> OneStatementRequests(const std::vector<ReserveRequest>& requests,
                                       bool exact_tags);
void CreateMissingRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                       const std::vector<bool>& at_once);
void CreateAndReserve(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                      const std::vector<bool>& at_once, Slots& out);
// ReserveRows with `read_tokens` false skips reading the recorded tokens:
// every tokened request is taken for a new one, and a recorded token then
// fails the token INSERT with a duplicate key (1062), for the caller to run
// the batch again reading them. Replays are rare (a lost answer), so the
// first try saves a round trip. `exact_tags`: leaf_alloc's key column
// compares byte for byte (storage/mysql/mysql_key_columns.h); if not, a key that
// matches another key's row is refused (KeyFoldsOntoAnotherError).
void ReserveRows(MysqlConn& c, const std::vector<ReserveRequest>& requests,
                 const std::vector<bool>& at_once, Slots& out, bool read_tokens, bool exact_tags);

// Runs list statement `kind` of the session in use, an IN list of keys
// whose rows answer (key, value), over `keys` (kListMax a statement, padded
// to a power of two): every row's pair.
std::map<std::string, int64_t> ReadPairs(MysqlConn& c, int kind,
                                         const std::vector<std::string>& keys);

// In a reservation's transaction (ReserveRows): sets the allocation time of
// each row tag to the database's clock, never back (mysql_key_times.cc).
// REQUIRES: the tags in a fixed order (two batches lock them alike).
void StampTimes(MysqlConn& c, const std::vector<const std::string*>& tags);

}  // namespace seqd::mysql_leaf
