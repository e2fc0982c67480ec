// MysqlMessageStore's reads (max seqs, a range, by seqs), message status,
// the conversation's min seq, members and unread counts: each one short
// transaction on the statements of mysql_message_sql.h; reads and writes
// pass the store group guard (MysqlShardGuard) before their COMMIT.
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/message_store_rows.h"
#include "storage/mysql/mysql_message_sql.h"
#include "storage/mysql/mysql_message_store.h"

namespace seqd {

using namespace mysql_message_sql;  // NOLINT: this store's private header

namespace {

StoredMessage ReadMessage(sql::ResultSet& rs) {
  StoredMessage m;
  m.conv_id = rs.getString(1).asStdString();
  m.seq = rs.getInt64(2);
  m.server_msg_id = rs.getInt64(3);
  m.sender_id = rs.getString(4).asStdString();
  m.client_msg_id = rs.getString(5).asStdString();
  m.content_type = rs.getInt(6);
  m.payload = rs.getString(7).asStdString();
  m.send_time_ms = rs.getInt64(8);
  m.status = MessageStatusFromColumn(rs.getInt(9));
  return m;
}

// SetReadSeq's rules: never backwards, never above `upper`.
std::optional<Error> ReadSeqRuleBroken(const MemberState& m, int64_t read_seq, int64_t upper) {
  if (read_seq < m.read_seq) {
    return MakeError(ErrorCode::kFailedPrecondition, "read_seq " + std::to_string(read_seq) +
                                                         " is below the stored read_seq " +
                                                         std::to_string(m.read_seq));
  }
  if (read_seq > upper) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "read_seq " + std::to_string(read_seq) + " is above " + std::to_string(upper));
  }
  return std::nullopt;
}

MemberState ReadMember(sql::ResultSet& rs) {
  MemberState m;
  m.min_seq = rs.getInt64(1);
  if (!rs.isNull(2)) m.max_seq = rs.getInt64(2);
  m.read_seq = rs.getInt64(3);
  return m;
}

}  // namespace

Result<int64_t> MysqlMessageStore::MaxSeq(std::string_view conv_id) {
  return guard_.Read<int64_t>(
      *pool_, kSession, "max seq", conv_id,
      [&](MysqlConn& c) -> Result<int64_t> { return c.QueryInt64(kMaxSeq, conv_id).value_or(0); });
}

Result<std::vector<int64_t>> MysqlMessageStore::MaxSeqs(std::span<const std::string> conv_ids) {
  if (conv_ids.empty()) return std::vector<int64_t>();
  std::vector<std::string> distinct;
  {
    std::unordered_map<std::string, bool> seen;
    for (const std::string& c : conv_ids) {
      if (seen.emplace(c, true).second) distinct.push_back(c);
    }
  }
  return guard_.Read<std::vector<int64_t>>(*pool_, kSession, "max seqs", distinct,
                                           [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
                                             std::unordered_map<std::string, int64_t> max;
                                             ReadMaxSeqs(c, distinct, max);
                                             std::vector<int64_t> out;
                                             out.reserve(conv_ids.size());
                                             for (const std::string& conv : conv_ids)
                                               out.push_back(max[conv]);
                                             return out;
                                           });
}

Result<MessagePage> MysqlMessageStore::GetRange(const RangeQuery& q) {
  if (Status valid = message_store::CheckRange(q); !valid.ok()) return valid.error();
  const int64_t limit = ClampRangeLimit(q.limit);
  return guard_.Read<MessagePage>(
      *pool_, kSession, "get range", q.conv_id, [&](MysqlConn& c) -> Result<MessagePage> {
        sql::PreparedStatement& s = c.Stmt(q.descending ? kRangeDesc : kRangeAsc, q.conv_id,
                                           q.from_seq, q.to_seq, limit + 1);
        std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
        MessagePage page;
        while (rs->next()) {
          if (static_cast<int64_t>(page.messages.size()) == limit) {
            page.more = true;
            break;
          }
          page.messages.push_back(ReadMessage(*rs));
        }
        return page;
      });
}

Result<std::vector<StoredMessage>> MysqlMessageStore::GetBySeqs(std::string_view conv_id,
                                                                std::span<const int64_t> seqs) {
  std::vector<int64_t> sorted(seqs.begin(), seqs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.empty()) return std::vector<StoredMessage>();
  return guard_.Read<std::vector<StoredMessage>>(
      *pool_, kSession, "get by seqs", conv_id,
      [&](MysqlConn& c) -> Result<std::vector<StoredMessage>> {
        std::vector<StoredMessage> out;
        for (size_t at = 0; at < sorted.size(); at += kInListMax) {
          const size_t n = std::min(kInListMax, sorted.size() - at);
          sql::PreparedStatement& s = c.List(kBySeqsIn, n);
          SetParam(s, 1, conv_id);
          for (size_t i = 0; i < n; ++i) SetParam(s, static_cast<unsigned>(i + 2), sorted[at + i]);
          ForEachRow(s, [&](sql::ResultSet& rs) { out.push_back(ReadMessage(rs)); });
        }
        return out;
      });
}

Result<StoredMessage> MysqlMessageStore::SetStatus(std::string_view conv_id, int64_t seq,
                                                   MessageStatus status) {
  if (Status valid = message_store::CheckNewStatus(status); !valid.ok()) return valid.error();
  return pool_->Run<StoredMessage>(
      kSession, "set status", [&](MysqlConn& c) -> Result<StoredMessage> {
        std::optional<StoredMessage> m;
        if (c.Execute(kSetStatus, static_cast<int>(status), conv_id, seq) > 0) {
          m = c.QueryRow(kSelectOne, ReadMessage, conv_id, seq);
        }
        // A message missing from a group the shard has left may be in the
        // new one: the guard's answer (retry) comes first.
        if (auto refused = guard_.Admit(c, conv_id)) return *refused;
        if (!m) return MakeError(ErrorCode::kNotFound, "no such message");
        c.Commit();
        return std::move(*m);
      });
}

Result<int64_t> MysqlMessageStore::GetConvMinSeq(std::string_view conv_id) {
  return guard_.Read<int64_t>(*pool_, kSession, "get conv min seq", conv_id,
                              [&](MysqlConn& c) -> Result<int64_t> {
                                return c.QueryInt64(kGetConvMin, conv_id).value_or(1);
                              });
}

Status MysqlMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  return pool_->Run<Ok>(kSession, "set conv min seq", [&](MysqlConn& c) -> Result<Ok> {
    c.Execute(kSetConvMin, conv_id, min_seq);
    if (auto refused = guard_.Admit(c, conv_id)) return *refused;
    c.Commit();
    return Ok{};
  });
}

Result<std::optional<MemberState>> MysqlMessageStore::GetMember(std::string_view conv_id,
                                                                std::string_view user_id) {
  return guard_.Read<std::optional<MemberState>>(
      *pool_, kSession, "get member", conv_id,
      [&](MysqlConn& c) -> Result<std::optional<MemberState>> {
        return c.QueryRow(kGetMember, ReadMember, conv_id, user_id);
      });
}

Status MysqlMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                    const MemberState& state) {
  return pool_->Run<Ok>(kSession, "put member", [&](MysqlConn& c) -> Result<Ok> {
    c.Execute(kPutMember, conv_id, user_id, state.min_seq, state.max_seq, state.read_seq);
    if (auto refused = guard_.Admit(c, conv_id)) return *refused;
    c.Commit();
    return Ok{};
  });
}

Result<MemberState> MysqlMessageStore::SetReadSeq(std::string_view conv_id,
                                                  std::string_view user_id, int64_t read_seq,
                                                  int64_t upper) {
  return pool_->Run<MemberState>(
      kSession, "set read seq", [&](MysqlConn& c) -> Result<MemberState> {
        std::optional<MemberState> m =
            c.QueryRow(kGetMemberForUpdate, ReadMember, conv_id, user_id);
        const std::optional<Error> broken =
            m ? ReadSeqRuleBroken(*m, read_seq, upper)
              : std::optional<Error>(MakeError(ErrorCode::kNotFound, "not a member"));
        if (!broken && read_seq != m->read_seq) c.Execute(kSetRead, read_seq, conv_id, user_id);
        // A refusal read in a group the shard has left may be stale: the
        // guard's (retry) comes first.
        if (auto refused = guard_.Admit(c, conv_id)) return *refused;
        if (broken) return *broken;
        c.Commit();
        m->read_seq = read_seq;
        return *m;
      });
}

Result<int64_t> MysqlMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                               int64_t after_seq, int64_t upto_seq) {
  return guard_.Read<int64_t>(
      *pool_, kSession, "count unread", conv_id, [&](MysqlConn& c) -> Result<int64_t> {
        return c.QueryInt64(kCountUnread, conv_id, after_seq, upto_seq, user_id).value_or(0);
      });
}

}  // namespace seqd
