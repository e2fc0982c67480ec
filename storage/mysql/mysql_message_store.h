// MessageStore on MySQL/MariaDB (InnoDB) via Connector/C++.
//
// Tables: seqd_message, seqd_conv, seqd_conv_member (see EnsureSchema in
// mysql_message_store.cc). Ids are VARBINARY(255) (compared byte for byte;
// an older seqd's VARCHAR(128) utf8mb4_bin tables are used as they are:
// KeepsTrailingSpaces); payload is a MEDIUMBLOB. Sessions run READ
// COMMITTED.
//
// Append, fast path: one transaction of at most three kinds of statement:
// one SELECT conv_id, MAX(seq) ... GROUP BY conv_id for the conversations the
// cache does not know, one multi-row INSERT per chunk of up to 256 rows
// (fewer if the payloads are large), sent as text with hex literals (MariaDB
// parses literals faster than it binds 2048 parameters), COMMIT. If an INSERT hits a duplicate
// key (a re-send, or a stale cache entry), the transaction is rolled back and
// the batch is redone row by row in a new one: per row INSERT; on a duplicate
// key either the original message is returned (duplicate = true) or the max
// seq is read again and the row restamped. Deadlocks and lock wait timeouts
// are kStoreUnavailable; so is a connection lost during COMMIT (outcome
// unknown). A connection lost before COMMIT is retried once on a new
// connection, like MysqlStore.
//
// Connections: a pool of at most `pool_size` connections, opened lazily (the
// constructor never connects); each keeps its prepared statements.
//
// Store groups: a status, member, read seq or conversation min seq is
// written only while its shard's lease row here is unsealed, checked in
// its transaction (MysqlShardGuard); else kStoreUnavailable, nothing
// written.
//
// Thread safety: all methods are safe to call concurrently. Calls block on
// network I/O.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/message_store.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_shard_guard.h"
#include "storage/mysql/mysql_store.h"
#include "storage/mysql/mysql_store_base.h"

namespace seqd {

class MysqlMessageStore final : public MysqlStoreBase<MessageStore> {
 public:
  // On its own pool (from MysqlOptions) or a shared one.
  using MysqlStoreBase::MysqlStoreBase;
  // One store group's, on `pool`, its reads and writes passing `guard`.
  MysqlMessageStore(std::shared_ptr<MysqlPool> pool, MysqlShardGuard guard)
      : MysqlStoreBase(std::move(pool)), guard_(std::move(guard)) {}

  Status EnsureSchema() override;
  bool KeepsTrailingSpaces() const override { return exact_ids_.load(std::memory_order_relaxed); }
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& max_seq_cache) override;
  Result<std::vector<AppendOutcome>> AppendFenced(std::span<const AppendRequest> batch,
                                                  MaxSeqCache& max_seq_cache,
                                                  AppendFencing& fencing) override;
  Result<int64_t> MaxSeq(std::string_view conv_id) override;
  Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string> conv_ids) override;
  Result<MessagePage> GetRange(const RangeQuery& query) override;
  Result<std::vector<StoredMessage>> GetBySeqs(std::string_view conv_id,
                                               std::span<const int64_t> seqs) override;
  Result<StoredMessage> SetStatus(std::string_view conv_id, int64_t seq,
                                  MessageStatus status) override;
  Result<int64_t> GetConvMinSeq(std::string_view conv_id) override;
  Status SetConvMinSeq(std::string_view conv_id, int64_t min_seq) override;
  Result<std::optional<MemberState>> GetMember(std::string_view conv_id,
                                               std::string_view user_id) override;
  Status PutMember(std::string_view conv_id, std::string_view user_id,
                   const MemberState& state) override;
  Result<MemberState> SetReadSeq(std::string_view conv_id, std::string_view user_id,
                                 int64_t read_seq, int64_t upper) override;
  Result<int64_t> CountUnread(std::string_view conv_id, std::string_view user_id, int64_t after_seq,
                              int64_t upto_seq) override;
  Status Ping() override;

 private:
  // `fencing`: null outside cluster mode.
  Result<std::vector<AppendOutcome>> AppendImpl(std::span<const AppendRequest> batch,
                                                MaxSeqCache& max_seq_cache, AppendFencing* fencing);

  // seqd_message's ids compare byte for byte (storage/mysql/mysql_key_columns.h),
  // as read by EnsureSchema: true for the tables seqd creates, false for an
  // older seqd's, whose VARCHAR utf8mb4_bin columns pad trailing spaces.
  std::atomic<bool> exact_ids_{true};
  // Keeps the unfenced reads and writes out of a group their shard left.
  const MysqlShardGuard guard_;
};

}  // namespace seqd
