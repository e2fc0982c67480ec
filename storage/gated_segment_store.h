// A SegmentStore that hands every call to another store after asking its
// gate, Admit(): an error Admit() returns answers the call instead (every
// request of a batch), and the inner store is not called. The decorators
// derive from it: FaultyStore (injected latency and failures) and
// SheddingSegmentStore (load shedding).
//
// Thread safety: as safe as the inner store and Admit().
#pragma once

#include "storage/segment_store.h"

namespace seqd {

class GatedSegmentStore : public SegmentStore {
 public:
  // Does not take ownership; `inner` must outlive this store.
  explicit GatedSegmentStore(SegmentStore& inner) : inner_(inner) {}

  Status EnsureSchema() override;
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override;
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override;
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  Status Ping() override;
  Status Warm() override;

 protected:
  // Ok to let a call through to the inner store; else the error that
  // answers it. Called once per call, on the caller's thread.
  virtual Status Admit() = 0;

 private:
  SegmentStore& inner_;
};

}  // namespace seqd
