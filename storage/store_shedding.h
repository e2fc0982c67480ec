// Load shedding for the segment store: every SheddingSegmentStore call on
// a thread marked by a ShedScope (common/shed_scope.h: its runner could not
// queue the work) fails at once with ShedError(), without touching the
// database.
//
// Thread safety: as safe as the store it wraps.
#pragma once

#include <memory>

#include "common/shed_scope.h"
#include "storage/segment_store.h"

namespace seqd {

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
