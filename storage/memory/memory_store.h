// In-memory SegmentStore for tests and benchmarks. Same semantics as the
// SQL stores; nothing survives the process.
//
// Thread safety: all methods are safe to call concurrently.
#pragma once

#include <array>
#include <map>

#include "common/mutex.h"
#include "storage/segment_store.h"

namespace seqd {

class MemoryStore final : public SegmentStore {
 public:
  Status EnsureSchema() override;
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  // The default's (rows created first, then one request at a time), with
  // block tokens kept in memory.
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  // User seqs in memory.
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  // Stamped times in memory; an unstamped row answers its update_time_ms.
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  // Min seqs in memory; fences: kFailedPrecondition (no cluster mode).
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override;
  Status Ping() override;

  // Test hook: deletes a row as an operator would with SQL.
  void DeleteKey(std::string_view key) EXCLUDES(mu_);

 private:
  struct TokenBlock {
    ReservedSegment range;
    int64_t created_ms = 0;
  };
  Result<ReservedSegment> ReserveLocked(std::string_view key, std::optional<int64_t> step)
      REQUIRES(mu_);
  Result<ReservedSegment> ReserveTokenedLocked(const ReserveRequest& r) REQUIRES(mu_);

  Mutex mu_;
  std::map<std::string, KeyRow, std::less<>> rows_ GUARDED_BY(mu_);
  // By (key, token).
  std::map<std::pair<std::string, std::string>, TokenBlock> tokens_ GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> min_seqs_ GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> alloc_ms_ GUARDED_BY(mu_);
  // By (user, conversation): min, max and read seq (UserSeqField - 1).
  std::map<std::pair<std::string, std::string>, std::array<int64_t, 3>> user_seqs_ GUARDED_BY(mu_);
};

}  // namespace seqd
