// Private to MysqlMessageStore (mysql_message_store.cc: schema and
// statements; mysql_message_append.cc: Append; mysql_message_reads.cc:
// reads, members, status): what its files share. The statement texts behind
// these ids are in mysql_message_store.cc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/mysql/mysql_pool.h"

namespace seqd::mysql_message_sql {

// Ids into the session's statement table.
enum StmtId {
  kMaxSeq,
  kSelectByClient,
  kRangeAsc,
  kRangeDesc,
  kSelectOne,
  kSetStatus,
  kGetConvMin,
  kSetConvMin,
  kGetMember,
  kGetMemberForUpdate,
  kPutMember,
  kSetRead,
  kCountUnread,
  kPing,
  kLeaseOf,
  kNumStmts,
};

// Statements whose text depends on a count (IN lists, multi-row INSERT).
enum ListKind { kInsertRows, kMaxSeqIn, kBySeqsIn, kFencesIn };

// IN-list length per SELECT.
constexpr size_t kInListMax = 256;

// The statements of MysqlMessageStore. One object: a connection keeps its
// prepared statements per session address.
extern const MysqlSession kSession;

// "INSERT INTO seqd_message (<every column>) VALUES ": a text INSERT's
// start, its rows of values to follow in column order.
extern const std::string_view kInsertRowsPrefix;

// Reads MAX(seq) of `convs` into `out` (0 for none), with kMaxSeqIn's IN
// lists, in the transaction open on `c`.
void ReadMaxSeqs(MysqlConn& c, const std::vector<std::string>& convs,
                 std::unordered_map<std::string, int64_t>& out);

}  // namespace seqd::mysql_message_sql
