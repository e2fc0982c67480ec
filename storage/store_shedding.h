// Load shedding for the segment store: while a thread runs work its runner
// could not queue (the database queue is full: server/base/task_runner.h),
// every SheddingSegmentStore call on that thread fails at once with
// kStoreUnavailable, without touching the database. The caller (the
// allocator, key admin) handles it as any store failure: the request gets
// 503 STORE_UNAVAILABLE now instead of waiting behind the queue.
//
// Thread safety: ShedScope and ShedThisThread() concern the calling thread
// only; SheddingSegmentStore is as safe as the store it wraps.
#pragma once

#include <memory>

#include "storage/segment_store.h"

namespace seqd {

// True while a ShedScope is alive on this thread.
bool ShedThisThread();

// Marks the calling thread as shedding for its lifetime. Nests.
class ShedScope {
 public:
  ShedScope();
  ~ShedScope();
  ShedScope(const ShedScope&) = delete;
  ShedScope& operator=(const ShedScope&) = delete;
};

// The error a shed call returns.
Error ShedError();

class SheddingSegmentStore final : public SegmentStore {
 public:
  explicit SheddingSegmentStore(std::unique_ptr<SegmentStore> inner) : inner_(std::move(inner)) {}

  Status EnsureSchema() override;
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override;
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  Status Ping() override;
  Status Warm() override;

 private:
  std::unique_ptr<SegmentStore> inner_;
};

}  // namespace seqd
