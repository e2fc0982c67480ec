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

#include <functional>
#include <memory>
#include <vector>

#include "storage/segment_store.h"
#include "storage/store_placement.h"

namespace seqd {

class GroupedSegmentStore final : public SegmentStore {
 public:
  // groups[i] is placement.groups()[i]'s store; `placement` must outlive
  // this store.
  GroupedSegmentStore(std::vector<std::unique_ptr<SegmentStore>> groups,
                      const StorePlacement& placement);

  Status EnsureSchema() override;
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                        const ShardFence& fence) override;
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) override;
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override;
  Result<KeyRow> GetKey(std::string_view key) override;
  // Every group's rows after `after`, merged in key order.
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override;
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override;
  Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override;
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override;
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard) override;
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override;
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override;
  Status Ping() override;
  Status Warm() override;

  // Group `index`'s own store (0: home), for the shard mover.
  SegmentStore& group(size_t index) { return *groups_[index]; }

 private:
  // The store of `key`'s group, or null for a group unknown here.
  SegmentStore* StoreOf(std::string_view key) const;
  // Runs `read(store, keys)` once per group on that group's keys and puts
  // the answers back in the order of `keys`.
  Result<std::vector<int64_t>> ReadByGroup(
      const std::vector<std::string>& keys,
      const std::function<Result<std::vector<int64_t>>(SegmentStore&,
                                                       const std::vector<std::string>&)>& read);
  // Indexes of `requests` by group.
  std::vector<std::vector<size_t>> SplitRequests(const std::vector<ReserveRequest>& requests) const;

  std::vector<std::unique_ptr<SegmentStore>> groups_;
  const StorePlacement& placement_;
};

// kStoreUnavailable for a key whose group this instance does not know.
Error UnknownStoreGroup();

}  // namespace seqd
