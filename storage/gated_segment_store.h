// A SegmentStore that hands every call to another store after asking its
// gate, Admit(): an error Admit() returns answers the call instead (every
// request of a batch), and the inner store is not called. The decorators
// derive from it: FaultyStore (injected latency and failures) and
// SheddingSegmentStore (load shedding). Like leveldb's EnvWrapper, each
// call's forwarding is one line, here in the class.
//
// Thread safety: as safe as the inner store and Admit().
#pragma once

#include <utility>

#include "storage/segment_store.h"

namespace seqd {

class GatedSegmentStore : public SegmentStore {
 public:
  // Does not take ownership; `inner` must outlive this store.
  explicit GatedSegmentStore(SegmentStore& inner) : inner_(inner) {}

  Status EnsureSchema() override { return Through(&SegmentStore::EnsureSchema); }
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    return Through(&SegmentStore::Reserve, key, step);
  }
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override {
    return Through(&SegmentStore::ReserveFenced, key, step, fence);
  }
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override {
    return Through(&SegmentStore::PruneBlockTokens, before_unix_ms);
  }
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override {
    return Through(&SegmentStore::CreateKeys, keys, description);
  }
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override {
    return Through(&SegmentStore::CreateKey, key, step, description);
  }
  Result<KeyRow> GetKey(std::string_view key) override {
    return Through(&SegmentStore::GetKey, key);
  }
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override {
    return Through(&SegmentStore::ListKeys, after, limit);
  }
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override {
    return Through(&SegmentStore::SetStep, key, step);
  }
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override {
    return Through(&SegmentStore::GetMaxIds, keys);
  }
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override {
    return Through(&SegmentStore::GetAllocTimes, keys);
  }
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override {
    return Through(&SegmentStore::GetMinSeqs, keys);
  }
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override {
    return Through(&SegmentStore::SetMinSeqs, values, fences, refused_shard);
  }
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override {
    return Through(&SegmentStore::GetUserSeqs, user, field, convs);
  }
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override {
    return Through(&SegmentStore::SetUserSeqs, user, field, raise_only, values);
  }
  Status Ping() override { return Through(&SegmentStore::Ping); }
  Status Warm() override { return Through(&SegmentStore::Warm); }

 protected:
  // Ok to let a call through to the inner store; else the error that
  // answers it. Called once per call, on the caller's thread.
  virtual Status Admit() = 0;

 private:
  // The inner store's answer to `call`, or Admit()'s error. R is a Status
  // or a Result.
  template <class R, class... Params, class... Args>
  R Through(R (SegmentStore::*call)(Params...), Args&&... args) {
    if (Status gate = Admit(); !gate.ok()) return gate.error();
    return (inner_.*call)(std::forward<Args>(args)...);
  }

  SegmentStore& inner_;
};

}  // namespace seqd
