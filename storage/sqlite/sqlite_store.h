// SegmentStore on a local SQLite file, using Leaf's leaf_alloc table.
//
// Durability: WAL journal with synchronous=FULL, so a reservation that
// Reserve() returned survives kill -9 and power loss.
//
// Sharing: several SqliteStore instances, in one process or in several, may
// open the same file. Reserve() runs under BEGIN IMMEDIATE (the write lock is
// taken before reading) and waits up to 5 s (busy_timeout) for a competing
// writer, so no two callers ever receive overlapping segments.
//
// Thread safety: all methods are safe to call concurrently; they serialize on
// one sqlite3 connection per instance. Calls block on disk I/O.
#pragma once

#include <memory>
#include <string>

#include "common/mutex.h"
#include "storage/segment_store.h"
#include "storage/sqlite/sqlite_db.h"
#include "storage/sqlite/sqlite_store_base.h"

namespace seqd {

class SqliteStore final : public SqliteStoreBase<SegmentStore, SqliteStore> {
 public:
  // Does not touch the file (SqliteStoreBase; Open opens it now).
  explicit SqliteStore(std::string path);

  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  // One transaction for the whole batch: the new rows asked for many to a
  // statement, then one statement per other request.
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  // seqd_min_seq; fences: kFailedPrecondition (no cluster mode).
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  // seqd_user_seq: one statement per conversation, one transaction a set.
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  // seqd_key_time's stamp, else the row's update_time (milliseconds here).
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  Status Ping() override;

 private:
  // In ReserveMany's transaction: the create requests whose key the batch
  // names once get their new row and its first segment from multi-row
  // INSERTs (up to 256 rows each); `created[i]` is set for each one served.
  // A key whose row exists is left to ReserveOneLocked. An error fails the
  // batch.
  Status InsertNewRowsLocked(const std::vector<ReserveRequest>& requests, const std::string& now,
                             std::vector<std::optional<ReservedSegment>>& created) REQUIRES(mu_);
  // In ReserveMany's transaction: request `r`'s result appended to `out`;
  // an error of the statement itself fails the batch.
  Status ReserveOneLocked(const ReserveRequest& r, const std::string& now,
                          std::vector<Result<ReservedSegment>>& out) REQUIRES(mu_);
  // ReserveOneLocked's two ways: with a block token (the recorded range,
  // or a new one recorded), and the row advanced (created if asked).
  Status ReserveTokenedLocked(const ReserveRequest& r, const std::string& now,
                              std::vector<Result<ReservedSegment>>& out) REQUIRES(mu_);
  Status ReserveRowLocked(const ReserveRequest& r, const std::string& now,
                          std::vector<Result<ReservedSegment>>& out) REQUIRES(mu_);
  // In ReserveMany's transaction: the time of each request with stamp_time
  // that reserved a range now (out[i], not a replay) upserted into
  // seqd_key_time; an error fails the batch.
  Status StampTimesLocked(const std::vector<ReserveRequest>& requests,
                          const std::vector<Result<ReservedSegment>>& out) REQUIRES(mu_);
  // Reads the row for `key`; kUnknownKey if absent.
  Result<KeyRow> SelectOneLocked(std::string_view key, const char* op) REQUIRES(mu_);
};

}  // namespace seqd
