// MessageStore on a local SQLite file (normally the file the SqliteStore
// uses; the tables do not overlap).
//
// Durability: WAL journal with synchronous=FULL, so an Append that returned
// survives kill -9 and power loss.
//
// Sharing: several instances, in one process or in several, may open the
// same file. Append runs under BEGIN IMMEDIATE (the write lock is taken
// before the max seq is read) and waits up to 5 s (busy_timeout) for a
// competing writer, so no other writer interleaves with a batch.
//
// Thread safety: all methods are safe to call concurrently; they serialize on
// one sqlite3 connection per instance. Calls block on disk I/O.
#pragma once

#include <memory>
#include <string>

#include "common/mutex.h"
#include "storage/message_store.h"
#include "storage/sqlite/sqlite_db.h"
#include "storage/sqlite/sqlite_store_base.h"

namespace seqd {

class SqliteMessageStore final : public SqliteStoreBase<MessageStore, SqliteMessageStore> {
 public:
  // Does not touch the file (SqliteStoreBase; Open opens it now).
  explicit SqliteMessageStore(std::string path);

  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& max_seq_cache) override;
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
  Result<int64_t> MaxSeqLocked(std::string_view conv_id, const char* op) REQUIRES(mu_);
  // The message stored under (conv, sender, client id), if any, as `r`'s
  // outcome (a duplicate unless it has `r`'s server_msg_id; a conflict if
  // its content differs from `r`'s).
  Result<std::optional<AppendOutcome>> SelectByClientLocked(const AppendRequest& r) REQUIRES(mu_);
  Result<std::optional<StoredMessage>> SelectOneLocked(std::string_view conv_id, int64_t seq,
                                                       const char* op) REQUIRES(mu_);
  // Stores `r` at the seq after `max` (its conversation's max seq, raised
  // to the true one if stale), or finds it stored under its client key.
  // `max` ends at the row's seq when it was inserted.
  Result<AppendOutcome> AppendOneLocked(const AppendRequest& r, int64_t& max) REQUIRES(mu_);
  Result<std::vector<AppendOutcome>> AppendLocked(std::span<const AppendRequest> batch,
                                                  const MaxSeqCache& cache, MaxSeqCache& new_max)
      REQUIRES(mu_);
};

}  // namespace seqd
