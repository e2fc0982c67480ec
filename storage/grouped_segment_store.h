// A SegmentStore over several store groups (docs/cluster.md, "Store
// groups"): every keyed call goes to the group the placement puts the key's
// shard in; a batch is split by group, one call per group, and its answers
// are put back in the order asked. No statement spans two groups, so a
// batch of several groups is several transactions: SetMinSeqs and
// SetUserSeqs of such a batch may be applied in one group and fail in
// another (both are idempotent: the caller's retry applies the rest).
//
// Thread safety: as the group stores; the placement is shared and safe.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "storage/segment_store.h"
#include "storage/store_calls.h"
#include "storage/store_placement.h"

namespace seqd {

class GroupedSegmentStore final : public SegmentStore {
 public:
  // groups[i] is placement.groups()[i]'s store; `placement` must outlive
  // this store.
  GroupedSegmentStore(std::vector<std::unique_ptr<SegmentStore>> groups,
                      const StorePlacement& placement);

  Status EnsureSchema() override { return CallEach(groups_, &SegmentStore::EnsureSchema); }
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    return OnKeysGroup(key, &SegmentStore::Reserve, key, step);
  }
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override {
    return OnKeysGroup(key, &SegmentStore::ReserveFenced, key, step, fence);
  }
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  // The sum over the groups.
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override {
    return OnKeysGroup(key, &SegmentStore::CreateKey, key, step, description);
  }
  Result<KeyRow> GetKey(std::string_view key) override {
    return OnKeysGroup(key, &SegmentStore::GetKey, key);
  }
  // Every group's rows after `after`, merged in key order.
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override {
    return OnKeysGroup(key, &SegmentStore::SetStep, key, step);
  }
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override {
    return ReadByGroup(keys, [](SegmentStore& s, const auto& k) { return s.GetMaxIds(k); });
  }
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override {
    return ReadByGroup(keys, [](SegmentStore& s, const auto& k) { return s.GetAllocTimes(k); });
  }
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override {
    return ReadByGroup(keys, [](SegmentStore& s, const auto& k) { return s.GetMinSeqs(k); });
  }
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard) override;
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override {
    return ReadByGroup(
        convs, [&](SegmentStore& s, const auto& c) { return s.GetUserSeqs(user, field, c); });
  }
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  Status Ping() override { return CallEach(groups_, &SegmentStore::Ping); }
  Status Warm() override { return CallEach(groups_, &SegmentStore::Warm); }

  // Group `index`'s own store (0: home), for the shard mover.
  SegmentStore& group(size_t index) { return *groups_[index]; }

 private:
  // The store of `key`'s group, or null for a group unknown here.
  SegmentStore* StoreOf(std::string_view key) const;
  // `call` on the store of `key`'s group, or UnknownStoreGroup().
  template <class R, class... Params, class... Args>
  R OnKeysGroup(std::string_view key, R (SegmentStore::*call)(Params...), Args&&... args) {
    return CallOrRefuse(StoreOf(key), &UnknownStoreGroup, call, std::forward<Args>(args)...);
  }
  // `read` once per group on that group's keys (seqd::ReadByGroup).
  template <class Read>
  Result<std::vector<int64_t>> ReadByGroup(const std::vector<std::string>& keys, const Read& read) {
    auto group_of = [this](std::string_view key) { return placement_.GroupOfKey(key); };
    return seqd::ReadByGroup(groups_, keys, group_of, &UnknownStoreGroup, read);
  }
  // Indexes of `requests` by group.
  std::vector<std::vector<size_t>> SplitRequests(const std::vector<ReserveRequest>& requests) const;

  std::vector<std::unique_ptr<SegmentStore>> groups_;
  const StorePlacement& placement_;
};

}  // namespace seqd
