#include "storage/grouped_message_store.h"

#include <utility>

namespace seqd {

GroupedMessageStore::GroupedMessageStore(std::vector<std::unique_ptr<MessageStore>> groups,
                                         const StorePlacement& placement)
    : groups_(std::move(groups)), placement_(placement) {}

MessageStore* GroupedMessageStore::StoreOf(std::string_view conv_id) const {
  const size_t g = placement_.GroupOfKey(conv_id);
  return g < groups_.size() ? groups_[g].get() : nullptr;
}

bool GroupedMessageStore::KeepsTrailingSpaces() const {
  for (const auto& g : groups_) {
    if (!g->KeepsTrailingSpaces()) return false;
  }
  return true;
}

Result<std::vector<AppendOutcome>> GroupedMessageStore::AppendByGroup(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing* fencing) {
  std::vector<std::vector<size_t>> index(groups_.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t g = placement_.GroupOfKey(batch[i].conv_id);
    if (g >= groups_.size()) return UnknownStoreGroup();
    index[g].push_back(i);
  }
  auto append = [&](size_t g, std::span<const AppendRequest> part) {
    if (fencing == nullptr) return groups_[g]->Append(part, max_seq_cache);
    AppendFencing mine;
    for (const ShardFence& f : fencing->fences) {
      if (placement_.GroupOfShard(f.shard) == g) mine.fences.push_back(f);
    }
    auto got = groups_[g]->AppendFenced(part, max_seq_cache, mine);
    fencing->refused = mine.refused;
    return got;
  };
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (index[g].size() == batch.size()) return append(g, batch);  // one group: as given
  }
  std::vector<AppendOutcome> out(batch.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (index[g].empty()) continue;
    std::vector<AppendRequest> part;
    part.reserve(index[g].size());
    for (size_t i : index[g]) part.push_back(batch[i]);
    auto got = append(g, part);
    if (!got) return got;
    for (size_t j = 0; j < got->size() && j < index[g].size(); ++j) {
      out[index[g][j]] = (*got)[j];
    }
  }
  return out;
}

}  // namespace seqd
