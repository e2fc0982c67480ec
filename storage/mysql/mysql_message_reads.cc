// MysqlMessageStore's reads (max seqs, a range, by seqs), message status,
// the conversation's min seq, members and unread counts: each one short
// transaction on the statements of mysql_message_sql.h.
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
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

MemberState ReadMember(sql::ResultSet& rs) {
  MemberState m;
  m.min_seq = rs.getInt64(1);
  if (!rs.isNull(2)) m.max_seq = rs.getInt64(2);
  m.read_seq = rs.getInt64(3);
  return m;
}

}  // namespace

Result<int64_t> MysqlMessageStore::MaxSeq(std::string_view conv_id) {
  const std::string conv(conv_id);
  return pool_->Run<int64_t>(kSession, "max seq", [&](MysqlConn& c) -> Result<int64_t> {
    sql::PreparedStatement& s = c.Stmt(kMaxSeq);
    s.setString(1, conv);
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    const int64_t max = rs->next() ? rs->getInt64(1) : 0;
    rs.reset();
    c.Commit();
    return max;
  });
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
  return pool_->Run<std::vector<int64_t>>(kSession, "max seqs",
                                          [&](MysqlConn& c) -> Result<std::vector<int64_t>> {
                                            std::unordered_map<std::string, int64_t> max;
                                            ReadMaxSeqs(c, distinct, max);
                                            c.Commit();
                                            std::vector<int64_t> out;
                                            out.reserve(conv_ids.size());
                                            for (const std::string& conv : conv_ids)
                                              out.push_back(max[conv]);
                                            return out;
                                          });
}

Result<MessagePage> MysqlMessageStore::GetRange(const RangeQuery& q) {
  if (q.from_seq > q.to_seq || q.limit == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "get range: REQUIRES from_seq <= to_seq and limit >= 1");
  }
  const int64_t limit = ClampRangeLimit(q.limit);
  return pool_->Run<MessagePage>(kSession, "get range", [&](MysqlConn& c) -> Result<MessagePage> {
    sql::PreparedStatement& s = c.Stmt(q.descending ? kRangeDesc : kRangeAsc);
    s.setString(1, q.conv_id);
    s.setInt64(2, q.from_seq);
    s.setInt64(3, q.to_seq);
    s.setInt64(4, limit + 1);
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    MessagePage page;
    while (rs->next()) {
      if (static_cast<int64_t>(page.messages.size()) == limit) {
        page.more = true;
        break;
      }
      page.messages.push_back(ReadMessage(*rs));
    }
    rs.reset();
    c.Commit();
    return page;
  });
}

Result<std::vector<StoredMessage>> MysqlMessageStore::GetBySeqs(std::string_view conv_id,
                                                                std::span<const int64_t> seqs) {
  std::vector<int64_t> sorted(seqs.begin(), seqs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.empty()) return std::vector<StoredMessage>();
  const std::string conv(conv_id);
  return pool_->Run<std::vector<StoredMessage>>(
      kSession, "get by seqs", [&](MysqlConn& c) -> Result<std::vector<StoredMessage>> {
        std::vector<StoredMessage> out;
        for (size_t at = 0; at < sorted.size(); at += kInListMax) {
          const size_t n = std::min(kInListMax, sorted.size() - at);
          sql::PreparedStatement& s = c.List(kBySeqsIn, n);
          s.setString(1, conv);
          for (size_t i = 0; i < n; ++i) s.setInt64(static_cast<unsigned>(i + 2), sorted[at + i]);
          std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
          while (rs->next()) out.push_back(ReadMessage(*rs));
        }
        c.Commit();
        return out;
      });
}

Result<StoredMessage> MysqlMessageStore::SetStatus(std::string_view conv_id, int64_t seq,
                                                   MessageStatus status) {
  if (status == MessageStatus::kNormal) {
    return MakeError(ErrorCode::kInvalidArgument, "set status: REQUIRES status != normal");
  }
  const std::string conv(conv_id);
  return pool_->Run<StoredMessage>(kSession, "set status",
                                   [&](MysqlConn& c) -> Result<StoredMessage> {
                                     sql::PreparedStatement& upd = c.Stmt(kSetStatus);
                                     upd.setInt(1, static_cast<int>(status));
                                     upd.setString(2, conv);
                                     upd.setInt64(3, seq);
                                     if (upd.executeUpdate() == 0)
                                       return MakeError(ErrorCode::kNotFound, "no such message");
                                     sql::PreparedStatement& sel = c.Stmt(kSelectOne);
                                     sel.setString(1, conv);
                                     sel.setInt64(2, seq);
                                     std::unique_ptr<sql::ResultSet> rs(sel.executeQuery());
                                     if (!rs->next())
                                       return MakeError(ErrorCode::kNotFound, "no such message");
                                     StoredMessage m = ReadMessage(*rs);
                                     rs.reset();
                                     c.Commit();
                                     return m;
                                   });
}

Result<int64_t> MysqlMessageStore::GetConvMinSeq(std::string_view conv_id) {
  const std::string conv(conv_id);
  return pool_->Run<int64_t>(kSession, "get conv min seq", [&](MysqlConn& c) -> Result<int64_t> {
    sql::PreparedStatement& s = c.Stmt(kGetConvMin);
    s.setString(1, conv);
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    const int64_t min = rs->next() ? rs->getInt64(1) : 1;
    rs.reset();
    c.Commit();
    return min;
  });
}

Status MysqlMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  const std::string conv(conv_id);
  return pool_->Run<Ok>(kSession, "set conv min seq", [&](MysqlConn& c) -> Result<Ok> {
    sql::PreparedStatement& s = c.Stmt(kSetConvMin);
    s.setString(1, conv);
    s.setInt64(2, min_seq);
    s.executeUpdate();
    c.Commit();
    return Ok{};
  });
}

Result<std::optional<MemberState>> MysqlMessageStore::GetMember(std::string_view conv_id,
                                                                std::string_view user_id) {
  const std::string conv(conv_id);
  const std::string user(user_id);
  return pool_->Run<std::optional<MemberState>>(
      kSession, "get member", [&](MysqlConn& c) -> Result<std::optional<MemberState>> {
        sql::PreparedStatement& s = c.Stmt(kGetMember);
        s.setString(1, conv);
        s.setString(2, user);
        std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
        std::optional<MemberState> m;
        if (rs->next()) m = ReadMember(*rs);
        rs.reset();
        c.Commit();
        return m;
      });
}

Status MysqlMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                    const MemberState& state) {
  const std::string conv(conv_id);
  const std::string user(user_id);
  return pool_->Run<Ok>(kSession, "put member", [&](MysqlConn& c) -> Result<Ok> {
    sql::PreparedStatement& s = c.Stmt(kPutMember);
    s.setString(1, conv);
    s.setString(2, user);
    s.setInt64(3, state.min_seq);
    if (state.max_seq) {
      s.setInt64(4, *state.max_seq);
    } else {
      s.setNull(4, 0);
    }
    s.setInt64(5, state.read_seq);
    s.executeUpdate();
    c.Commit();
    return Ok{};
  });
}

Result<MemberState> MysqlMessageStore::SetReadSeq(std::string_view conv_id,
                                                  std::string_view user_id, int64_t read_seq,
                                                  int64_t upper) {
  const std::string conv(conv_id);
  const std::string user(user_id);
  return pool_->Run<MemberState>(
      kSession, "set read seq", [&](MysqlConn& c) -> Result<MemberState> {
        sql::PreparedStatement& s = c.Stmt(kGetMemberForUpdate);
        s.setString(1, conv);
        s.setString(2, user);
        std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
        if (!rs->next()) return MakeError(ErrorCode::kNotFound, "not a member");
        MemberState m = ReadMember(*rs);
        rs.reset();
        if (read_seq < m.read_seq) {
          return MakeError(ErrorCode::kFailedPrecondition, "read_seq " + std::to_string(read_seq) +
                                                               " is below the stored read_seq " +
                                                               std::to_string(m.read_seq));
        }
        if (read_seq > upper) {
          return MakeError(
              ErrorCode::kFailedPrecondition,
              "read_seq " + std::to_string(read_seq) + " is above " + std::to_string(upper));
        }
        if (read_seq != m.read_seq) {
          sql::PreparedStatement& upd = c.Stmt(kSetRead);
          upd.setInt64(1, read_seq);
          upd.setString(2, conv);
          upd.setString(3, user);
          upd.executeUpdate();
        }
        c.Commit();
        m.read_seq = read_seq;
        return m;
      });
}

Result<int64_t> MysqlMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                               int64_t after_seq, int64_t upto_seq) {
  const std::string conv(conv_id);
  const std::string user(user_id);
  return pool_->Run<int64_t>(kSession, "count unread", [&](MysqlConn& c) -> Result<int64_t> {
    sql::PreparedStatement& s = c.Stmt(kCountUnread);
    s.setString(1, conv);
    s.setInt64(2, after_seq);
    s.setInt64(3, upto_seq);
    s.setString(4, user);
    std::unique_ptr<sql::ResultSet> rs(s.executeQuery());
    const int64_t n = rs->next() ? rs->getInt64(1) : 0;
    rs.reset();
    c.Commit();
    return n;
  });
}

}  // namespace seqd
