// MysqlMessageStore::Append: one transaction per batch. Its fast path
// trusts the caller's max seqs and inserts the batch a chunk of rows per
// statement; a duplicate key sends the batch to the slow path, row by row
// from the true max seqs. In cluster mode the lease rows are written last,
// just before COMMIT.
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "storage/message_store_rows.h"
#include "storage/mysql/mysql_errors.h"
#include "storage/mysql/mysql_message_sql.h"
#include "storage/mysql/mysql_message_store.h"

namespace seqd {

using namespace mysql_message_sql;  // NOLINT: this store's private header

namespace {

// Rows per multi-row INSERT, and the payload bytes one may carry: written as
// hex literals that is 8 MiB of text, under the default max_allowed_packet
// of 16 MiB.
constexpr size_t kChunkRows = 256;
constexpr size_t kChunkBytes = 4 << 20;
// Duplicate-key retries of one row on the slow path (another process keeps
// committing the seq it stamped) before the batch fails kStoreUnavailable.
constexpr int kMaxRowRetries = 20;

// Which requests of a batch are stored, and for which conversations.
struct BatchShape {
  // first_of[i]: the first request with request i's client key
  // (conversation, sender, client message id); i itself unless request i
  // re-sends an earlier one of the batch.
  std::vector<size_t> first_of;
  // Each conversation once, in the order of its first request.
  std::vector<std::string> convs;
};

std::string ClientKey(const AppendRequest& r) {
  std::string key;
  key.reserve(r.conv_id.size() + r.sender_id.size() + r.client_msg_id.size() + 2);
  key.append(r.conv_id).push_back('\0');
  key.append(r.sender_id).push_back('\0');
  key.append(r.client_msg_id);
  return key;
}

BatchShape ShapeOf(std::span<const AppendRequest> batch) {
  BatchShape shape;
  shape.first_of.resize(batch.size());
  std::unordered_map<std::string, size_t> seen;
  std::unordered_map<std::string, bool> conv_seen;
  for (size_t i = 0; i < batch.size(); ++i) {
    shape.first_of[i] = seen.emplace(ClientKey(batch[i]), i).first->second;
    if (conv_seen.emplace(batch[i].conv_id, true).second) shape.convs.push_back(batch[i].conv_id);
  }
  return shape;
}

// Each of `convs`' max seq as `cache` knows it, read from the table for the
// conversations it does not know.
MaxSeqCache CachedMaxSeqs(MysqlConn& c, const std::vector<std::string>& convs,
                          const MaxSeqCache& cache) {
  MaxSeqCache cur;
  std::vector<std::string> unknown;
  for (const std::string& conv : convs) {
    auto hit = cache.find(conv);
    if (hit != cache.end()) {
      cur[conv] = hit->second;
    } else {
      unknown.push_back(conv);
    }
  }
  if (!unknown.empty()) ReadMaxSeqs(c, unknown, cur);
  return cur;
}

// Gives each request that is first of its client key the next seq of its
// conversation (advancing `cur`) in out[i]; returns those requests, in order.
std::vector<size_t> StampNewRows(std::span<const AppendRequest> batch,
                                 const std::vector<size_t>& first_of, MaxSeqCache& cur,
                                 std::vector<AppendOutcome>& out) {
  std::vector<size_t> rows;
  rows.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (first_of[i] != i) continue;
    const AppendRequest& r = batch[i];
    out[i] = AppendOutcome{++cur[r.conv_id], r.server_msg_id, r.send_time_ms, false};
    rows.push_back(i);
  }
  return rows;
}

// How many of rows[at...] the next INSERT carries: at least one, at most
// kChunkRows, and no more payload bytes than kChunkBytes after the first.
size_t ChunkLength(std::span<const AppendRequest> batch, const std::vector<size_t>& rows,
                   size_t at) {
  size_t n = 0;
  size_t bytes = 0;
  while (at + n < rows.size() && n < kChunkRows &&
         (n == 0 || bytes + batch[rows[at + n]].payload.size() <= kChunkBytes)) {
    bytes += batch[rows[at + n]].payload.size();
    ++n;
  }
  return n;
}

// `r` stamped with `seq` as a row of literals, "(conv,seq,...,0)".
void AppendRowLiteral(std::string& sql, const AppendRequest& r, int64_t seq) {
  sql += '(';
  AppendHexLiteral(sql, r.conv_id);
  sql += ',';
  sql += std::to_string(seq);
  sql += ',';
  sql += std::to_string(r.server_msg_id);
  sql += ',';
  AppendHexLiteral(sql, r.sender_id);
  sql += ',';
  AppendHexLiteral(sql, r.client_msg_id);
  sql += ',';
  sql += std::to_string(r.content_type);
  sql += ',';
  AppendHexLiteral(sql, r.payload);
  sql += ',';
  sql += std::to_string(r.send_time_ms);
  sql += ",0)";
}

// One text INSERT of `chunk` (indexes into `batch`, each stamped in `out`),
// the values as literals: MariaDB binds 8 parameters per row of a prepared
// statement one by one, which costs more of its CPU than parsing the
// literals.
std::string ChunkSql(std::span<const AppendRequest> batch, std::span<const size_t> chunk,
                     const std::vector<AppendOutcome>& out) {
  size_t bytes = 0;
  for (size_t i : chunk) bytes += batch[i].payload.size();
  std::string sql(kInsertRowsPrefix);
  sql.reserve(kInsertRowsPrefix.size() + chunk.size() * 96 + 2 * bytes);
  for (size_t k = 0; k < chunk.size(); ++k) {
    if (k > 0) sql += ',';
    AppendRowLiteral(sql, batch[chunk[k]], out[chunk[k]].seq);
  }
  return sql;
}

// The fast path's INSERTs: `rows` (stamped in `out`) a chunk per statement.
// False at the first duplicate key (a re-send, or a stale max seq): the
// transaction then holds only some of the rows and must be rolled back.
bool InsertChunks(MysqlConn& c, std::span<const AppendRequest> batch,
                  const std::vector<size_t>& rows, const std::vector<AppendOutcome>& out) {
  for (size_t at = 0; at < rows.size();) {
    const size_t n = ChunkLength(batch, rows, at);
    try {
      c.Update(ChunkSql(batch, std::span(rows).subspan(at, n), out));
    } catch (const sql::SQLException& e) {
      if (e.getErrorCode() != kMysqlErrDupKey) throw;
      return false;
    }
    at += n;
  }
  return true;
}

// The slow path's INSERT of one row: false on a duplicate key, which leaves
// the transaction as it was.
bool TryInsertRow(MysqlConn& c, const AppendRequest& r, int64_t seq) {
  try {
    ExecuteUpdate(c.List(kInsertRows, 1, r.conv_id, seq, r.server_msg_id, r.sender_id,
                         r.client_msg_id, r.content_type, r.payload, r.send_time_ms));
    return true;
  } catch (const sql::SQLException& e) {
    if (e.getErrorCode() != kMysqlErrDupKey) throw;
    return false;
  }
}

// The message stored under `r`'s client key, if any, as `r`'s outcome (a
// conflict if its content differs from `r`'s). One stored with `r`'s own
// server_msg_id was stored by an earlier run of this call whose COMMIT had
// an unknown outcome: not a duplicate of the client's.
std::optional<AppendOutcome> StoredByClient(MysqlConn& c, const AppendRequest& r) {
  auto read = [&](sql::ResultSet& rs) {
    const int64_t stored_id = rs.getInt64(2);
    const bool duplicate = stored_id != r.server_msg_id;
    const bool conflict =
        duplicate && message_store::ContentDiffers(r, rs.getInt(4), rs.getString(5).asStdString(),
                                                   MessageStatusFromColumn(rs.getInt(6)));
    return AppendOutcome{rs.getInt64(1), stored_id, rs.getInt64(3), duplicate, conflict};
  };
  return c.QueryRow(kSelectByClient, read, r.conv_id, r.sender_id, r.client_msg_id);
}

// Stores `r` at the seq after `max` (raised to its conversation's true max
// seq while another process keeps taking that one), or finds it stored
// under its client key. `max` ends at the row's seq when it was inserted.
Result<AppendOutcome> InsertOneRow(MysqlConn& c, const AppendRequest& r, int64_t& max) {
  for (int attempt = 0;; ++attempt) {
    if (TryInsertRow(c, r, max + 1))
      return AppendOutcome{++max, r.server_msg_id, r.send_time_ms, false};
    // Which key? A re-send (client id) or a stale max (primary key).
    if (std::optional<AppendOutcome> stored = StoredByClient(c, r)) return *stored;
    const int64_t true_max = c.QueryInt64(kMaxSeq, r.conv_id).value_or(0);
    if (true_max <= max) {
      return MakeError(ErrorCode::kInternal,
                       "mysql append: duplicate key on neither the client id nor the seq");
    }
    if (attempt + 1 >= kMaxRowRetries) {
      return MakeError(ErrorCode::kStoreUnavailable,
                       "mysql append: conversation too contended, seq kept moving");
    }
    max = true_max;
  }
}

// A request that repeats the client key of an earlier one of the batch,
// answered from the row stored under that key by now (found before the
// batch, or stored by the earlier request), in the transaction open on `c`.
Result<AppendOutcome> RepeatedRow(MysqlConn& c, const AppendRequest& r) {
  if (std::optional<AppendOutcome> stored = StoredByClient(c, r)) return *stored;
  return MakeError(ErrorCode::kInternal, "mysql append: a repeated client key has no row");
}

// The slow path, in a transaction the fast path left empty: `cur` read again
// from the table, then every request that is first of its client key stored
// row by row (out[i]), each advancing its conversation's max in `cur`, and
// every repeat answered from its key's row.
Status InsertRowByRow(MysqlConn& c, std::span<const AppendRequest> batch, const BatchShape& shape,
                      MaxSeqCache& cur, std::vector<AppendOutcome>& out) {
  cur.clear();
  ReadMaxSeqs(c, shape.convs, cur);
  for (size_t i = 0; i < batch.size(); ++i) {
    Result<AppendOutcome> stored = shape.first_of[i] == i
                                       ? InsertOneRow(c, batch[i], cur[batch[i].conv_id])
                                       : RepeatedRow(c, batch[i]);
    if (!stored) return stored.error();
    out[i] = *stored;
  }
  return OkStatus();
}

// The fast path stored every request that is first of its client key: each
// repeat within the batch answered with its first request's outcome, a
// conflict if its content differs from the first request's.
void CopyDuplicates(std::span<const AppendRequest> batch, const std::vector<size_t>& first_of,
                    std::vector<AppendOutcome>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t first = first_of[i];
    if (first == i) continue;
    out[i] = out[first];
    out[i].duplicate = true;
    out[i].conflict = message_store::ContentDiffers(batch[i], batch[first].content_type,
                                                    batch[first].payload, MessageStatus::kNormal);
  }
}

// Bumps the lease row of each of `fences` (one statement per kInListMax
// shards, one owner: this instance) and returns how many matched.
size_t BumpFences(MysqlConn& c, const std::vector<ShardFence>& fences) {
  size_t matched = 0;
  for (size_t at = 0; at < fences.size(); at += kInListMax) {
    const size_t n = std::min(kInListMax, fences.size() - at);
    sql::PreparedStatement& st = c.List(kFencesIn, n);
    st.setString(1, fences[at].owner);
    for (size_t i = 0; i < n; ++i) {
      st.setInt(static_cast<unsigned>(2 + 2 * i), static_cast<int>(fences[at + i].shard));
      st.setInt64(static_cast<unsigned>(3 + 2 * i), fences[at + i].epoch);
    }
    matched += static_cast<size_t>(st.executeUpdate());
  }
  return matched;
}

// The first shard of `fences` whose lease row is no longer its owner's at
// its epoch, if one is found.
std::optional<uint32_t> MovedShard(MysqlConn& c, const std::vector<ShardFence>& fences) {
  for (const ShardFence& f : fences) {
    std::unique_ptr<sql::ResultSet> rs(c.Stmt(kLeaseOf, static_cast<int>(f.shard)).executeQuery());
    if (!rs->next() || rs->getString(1).asStdString() != f.owner || rs->getInt64(2) != f.epoch) {
      return f.shard;
    }
  }
  return std::nullopt;
}

// Cluster mode (`fencing` set): writes every shard's lease row, last in the
// transaction, just before COMMIT (the lease rows are locked only for the
// commit; see MysqlStore's reservation). If a lease moved, kNotServing,
// with the shard in fencing->refused (the caller stops serving it); the
// transaction must then store nothing.
std::optional<Error> WriteFences(MysqlConn& c, AppendFencing* fencing) {
  if (!fencing) return std::nullopt;
  const std::vector<ShardFence>& fences = fencing->fences;
  if (BumpFences(c, fences) == fences.size()) return std::nullopt;
  if (std::optional<uint32_t> moved = MovedShard(c, fences)) {
    fencing->refused = moved;
  } else if (!fencing->refused) {
    fencing->refused = fences.front().shard;
  }
  return MakeError(ErrorCode::kNotServing, "shard " + std::to_string(*fencing->refused) +
                                               " is no longer held by this instance");
}

}  // namespace

Result<std::vector<AppendOutcome>> MysqlMessageStore::Append(std::span<const AppendRequest> batch,
                                                             MaxSeqCache& max_seq_cache) {
  return AppendImpl(batch, max_seq_cache, nullptr);
}

Result<std::vector<AppendOutcome>> MysqlMessageStore::AppendFenced(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing& fencing) {
  return AppendImpl(batch, max_seq_cache, &fencing);
}

Result<std::vector<AppendOutcome>> MysqlMessageStore::AppendImpl(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing* fencing) {
  if (batch.empty()) return std::vector<AppendOutcome>();
  const BatchShape shape = ShapeOf(batch);
  MaxSeqCache committed;  // each conversation's new max seq
  auto result = pool_->Run<std::vector<AppendOutcome>>(
      kSession,
      // Safe to run again after a COMMIT with an unknown outcome: rows it
      // did store come back through the client-id key with this request's
      // server_msg_id, and keep their seqs.
      "append", [&](MysqlConn& c) -> Result<std::vector<AppendOutcome>> {
        std::vector<AppendOutcome> out(batch.size());
        MaxSeqCache cur = CachedMaxSeqs(c, shape.convs, max_seq_cache);
        const std::vector<size_t> rows = StampNewRows(batch, shape.first_of, cur, out);
        if (InsertChunks(c, batch, rows, out)) {
          CopyDuplicates(batch, shape.first_of, out);
        } else {
          c.Rollback();
          if (Status slow = InsertRowByRow(c, batch, shape, cur, out); !slow) return slow.error();
        }
        if (auto fenced = WriteFences(c, fencing)) return *fenced;  // rolled back by the pool
        c.Commit();
        committed = std::move(cur);
        return out;
      });
  if (!result.ok()) {
    for (const std::string& conv : shape.convs) max_seq_cache.erase(conv);
    return result;
  }
  for (auto& [conv, max] : committed) max_seq_cache[conv] = max;
  return result;
}

}  // namespace seqd
