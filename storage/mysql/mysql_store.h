// SegmentStore on MySQL/MariaDB, sharing Leaf's leaf_alloc table as-is (a
// Leaf deployment and seqd can run against the same database).
//
// Connections: a small pool of at most `pool_size` connections, opened
// lazily (the constructor never connects). A caller waits for a free
// connection. Each connection keeps its own prepared statements.
//
// Failures: every sql::SQLException is caught here and turned into an Error:
// kStoreUnavailable for connection problems and lock timeouts, kKeyExists for
// duplicate keys (1062), kInternal otherwise. Messages carry the MySQL error
// code, never the password. When a call fails because its connection is gone
// (server restarted, connection killed, network timeout), that connection and
// the idle ones are discarded and the call is retried once on a new
// connection. A retried Reserve may skip a segment, never hand one out twice.
//
// Timeouts: connect `connect_timeout_s`, each read/write `rw_timeout_s`, so a
// dead or hung server is reported within seconds rather than hanging.
//
// Store groups: user seqs, a key's creation (CreateKey) and its step are
// written only while their shard's lease row here is unsealed, checked in
// their transaction (MysqlShardGuard); else kStoreUnavailable, nothing
// written. Reservations and min seqs are fenced instead (ReserveFenced,
// SetMinSeqs), and CreateKeys is not checked: it creates rows (max_id 1)
// for a fenced reservation that follows, which stores nothing in a group
// the shard has left; rows it leaves there are deleted with the shard's.
//
// Thread safety: all methods are safe to call concurrently. Calls block on
// network I/O.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_shard_guard.h"
#include "storage/mysql/mysql_store_base.h"
#include "storage/segment_store.h"

namespace seqd {

class MysqlStore final : public MysqlStoreBase<SegmentStore> {
 public:
  // On its own pool (from MysqlOptions) or a shared one.
  using MysqlStoreBase::MysqlStoreBase;
  // One store group's, on `pool`, its reads and writes passing `guard`.
  MysqlStore(std::shared_ptr<MysqlPool> pool, MysqlShardGuard guard)
      : MysqlStoreBase(std::move(pool)), guard_(std::move(guard)) {}

  // Parses mysql://user[:password]@host[:port]/database, or with several
  // hosts of one database (a Galera cluster's nodes) separated by commas,
  // host1:3306,host2:3306 (at most MysqlOptions::kMaxHosts, none empty or
  // listed twice; MysqlPool says how they are used). A port defaults to
  // 3306; user and password are percent-decoded ("p%40ss" is "p@ss");
  // an IPv6 host is written in brackets. An optional query sets
  // connect_timeout and rw_timeout (seconds) and retry_budget_ms, e.g.
  // "?rw_timeout=2&retry_budget_ms=500". kInvalidArgument, naming what is
  // wrong (never echoing the password), for anything malformed.
  static Result<MysqlOptions> ParseUrl(std::string_view url);

  Status EnsureSchema() override;
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  // ReserveEach's results, collected.
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  // One transaction for the whole batch: its rows are locked, then fenced,
  // then moved on with one statement per 1024 rows. Its statements wait at
  // most kBatchLockWaitS for a row lock: if one times out (a row locked by
  // another transaction, e.g. of an instance frozen mid-transaction), the
  // batch is rolled back (none of its ranges is served) and each request
  // runs alone, answered as it lands: first without waiting for a lock,
  // then those whose rows were still locked, one at a time, with the
  // connection's own wait (lock_wait_timeout, else the server's 50 s). So
  // a locked row delays its own key; the others, by about kBatchLockWaitS.
  // A single request is one transaction with the connection's own wait.
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  // A healthy reservation holds its rows for milliseconds.
  static constexpr int kBatchLockWaitS = 1;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  // One IN list per 1024 keys (mysql_min_seqs.cc).
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override;
  // seqd_min_seq (mysql_min_seqs.cc): IN lists; one fenced transaction.
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override;
  // The CREATE TABLE of seqd_min_seq (EnsureSchema runs it).
  static const char* MinSeqTableSql();
  // Makes an older seqd's seqd_min_seq compare keys byte for byte.
  static const char* MinSeqTableUpgradeSql();
  // seqd_block_token (mysql_block_tokens.cc), and its CREATE TABLE.
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  static const char* BlockTokenTableSql();
  // seqd_key_time (mysql_key_times.cc), and its CREATE TABLE.
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  static const char* KeyTimeTableSql();
  // seqd_user_seq (mysql_user_seqs.cc), and its CREATE TABLE.
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  static const char* UserSeqTableSql();
  Status Ping() override;
  // Prepares the statements of a reservation (one key, or a batch of up
  // to four; fenced too) on a pooled connection, opening it if the pool
  // has room.
  Status Warm() override;

 private:
  Result<ReservedSegment> ReserveImpl(std::string_view key, std::optional<int64_t> step,
                                      const ShardFence* fence);
  // One request alone, with the connection's own lock wait.
  Result<ReservedSegment> ReserveOne(const ReserveRequest& request);
  // `requests` in one transaction. With `lock_wait_s`, its statements wait
  // that long for a row lock (0: not at all), and a lock wait timeout
  // rolls the whole transaction back: nullopt, nothing reserved.
  std::optional<std::vector<Result<ReservedSegment>>> ReserveBatch(
      const std::vector<ReserveRequest>& requests, std::optional<int> lock_wait_s);

  // leaf_alloc.biz_tag compares byte for byte (storage/mysql/mysql_key_columns.h),
  // as read by EnsureSchema. Until then, and for a table that folds case
  // or pads spaces, each key's row is checked to be its own.
  std::atomic<bool> exact_tags_{false};
  // Keeps the unfenced reads and writes out of a group their shard left.
  const MysqlShardGuard guard_;
};

}  // namespace seqd
