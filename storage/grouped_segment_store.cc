#include "storage/grouped_segment_store.h"

#include <algorithm>
#include <utility>

namespace seqd {

GroupedSegmentStore::GroupedSegmentStore(std::vector<std::unique_ptr<SegmentStore>> groups,
                                         const StorePlacement& placement)
    : groups_(std::move(groups)), placement_(placement) {}

SegmentStore* GroupedSegmentStore::StoreOf(std::string_view key) const {
  const size_t g = placement_.GroupOfKey(key);
  return g < groups_.size() ? groups_[g].get() : nullptr;
}

std::vector<std::vector<size_t>> GroupedSegmentStore::SplitRequests(
    const std::vector<ReserveRequest>& requests) const {
  std::vector<std::vector<size_t>> parts(groups_.size() + 1);  // last: unknown groups
  for (size_t i = 0; i < requests.size(); ++i) {
    const size_t g = placement_.GroupOfKey(requests[i].key);
    parts[std::min(g, groups_.size())].push_back(i);
  }
  return parts;
}

std::vector<Result<ReservedSegment>> GroupedSegmentStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  std::vector<Result<ReservedSegment>> out(requests.size(), UnknownStoreGroup());
  const std::vector<std::vector<size_t>> parts = SplitRequests(requests);
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (parts[g].empty()) continue;
    std::vector<ReserveRequest> part;
    part.reserve(parts[g].size());
    for (size_t i : parts[g]) part.push_back(requests[i]);
    std::vector<Result<ReservedSegment>> got = groups_[g]->ReserveMany(part);
    for (size_t j = 0; j < got.size() && j < parts[g].size(); ++j) {
      out[parts[g][j]] = std::move(got[j]);
    }
  }
  return out;
}

void GroupedSegmentStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                                      const ReserveLanded& landed) {
  const std::vector<std::vector<size_t>> parts = SplitRequests(requests);
  for (size_t i : parts[groups_.size()]) landed(i, UnknownStoreGroup());
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (parts[g].empty()) continue;
    const std::vector<size_t>& index = parts[g];
    std::vector<ReserveRequest> part;
    part.reserve(index.size());
    for (size_t i : index) part.push_back(requests[i]);
    groups_[g]->ReserveEach(
        part, [&](size_t j, Result<ReservedSegment> r) { landed(index[j], std::move(r)); });
  }
}

Result<int64_t> GroupedSegmentStore::PruneBlockTokens(int64_t before_unix_ms) {
  int64_t total = 0;
  for (auto& g : groups_) {
    auto n = g->PruneBlockTokens(before_unix_ms);
    if (!n) return n;
    total += *n;
  }
  return total;
}

Status GroupedSegmentStore::CreateKeys(const std::vector<NewKey>& keys,
                                       std::string_view description) {
  auto group_of = [this](const NewKey& k) { return placement_.GroupOfKey(k.key); };
  return WriteByGroup(groups_, keys, group_of, &UnknownStoreGroup,
                      [&](SegmentStore& s, const std::vector<NewKey>& part) {
                        return s.CreateKeys(part, description);
                      });
}

Result<std::vector<KeyRow>> GroupedSegmentStore::ListKeys(std::string_view after, size_t limit) {
  std::vector<KeyRow> all;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto rows = groups_[g]->ListKeys(after, limit);
    if (!rows) return rows;
    for (KeyRow& row : *rows) {
      // A row left behind in a group its shard moved out of (until the
      // move's clean-up) is not listed twice.
      if (placement_.GroupOfKey(row.key) == g) all.push_back(std::move(row));
    }
  }
  std::sort(all.begin(), all.end(), [](const KeyRow& a, const KeyRow& b) { return a.key < b.key; });
  if (all.size() > limit) all.resize(limit);
  return all;
}

Status GroupedSegmentStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                                       const std::vector<ShardFence>& fences,
                                       uint32_t* refused_shard) {
  std::vector<std::vector<MinSeqValue>> part(groups_.size());
  std::vector<std::vector<ShardFence>> part_fences(groups_.size());
  for (const MinSeqValue& v : values) {
    const size_t g = placement_.GroupOfKey(v.key);
    if (g >= groups_.size()) return UnknownStoreGroup();
    part[g].push_back(v);
  }
  for (const ShardFence& f : fences) {
    const size_t g = placement_.GroupOfShard(f.shard);
    if (g >= groups_.size()) return UnknownStoreGroup();
    part_fences[g].push_back(f);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    // A fence goes with its shard's keys, in their group's transaction.
    if (part[g].empty() && !part_fences[g].empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "a fence for a shard without a key here");
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (part[g].empty()) continue;
    if (Status s = groups_[g]->SetMinSeqs(part[g], part_fences[g], refused_shard); !s) return s;
  }
  return OkStatus();
}

Status GroupedSegmentStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                        const std::vector<UserSeqValue>& values) {
  auto group_of = [this](const UserSeqValue& v) { return placement_.GroupOfKey(v.conv); };
  return WriteByGroup(groups_, values, group_of, &UnknownStoreGroup,
                      [&](SegmentStore& s, const std::vector<UserSeqValue>& part) {
                        return s.SetUserSeqs(user, field, raise_only, part);
                      });
}

}  // namespace seqd
