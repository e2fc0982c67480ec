// Private to MysqlMessageStore (mysql_message_store.cc: schema, statements,
// Append; mysql_message_reads.cc: reads, members, status): what both halves
// use. The statement texts behind these ids are in mysql_message_store.cc.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
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

// Reads MAX(seq) of `convs` into `out` (0 for none), with IN lists;
// `stmt(n)` is the kMaxSeqIn statement for n conversations.
void ReadMaxSeqs(const std::function<sql::PreparedStatement&(size_t)>& stmt,
                 const std::vector<std::string>& convs,
                 std::unordered_map<std::string, int64_t>& out);

}  // namespace seqd::mysql_message_sql
