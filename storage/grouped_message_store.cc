#include "storage/grouped_message_store.h"

#include <utility>

#include "storage/grouped_segment_store.h"

namespace seqd {

GroupedMessageStore::GroupedMessageStore(std::vector<std::unique_ptr<MessageStore>> groups,
                                         const StorePlacement& placement)
    : groups_(std::move(groups)), placement_(placement) {}

MessageStore* GroupedMessageStore::StoreOf(std::string_view conv_id) const {
  const size_t g = placement_.GroupOfKey(conv_id);
  return g < groups_.size() ? groups_[g].get() : nullptr;
}

Status GroupedMessageStore::EnsureSchema() {
  for (auto& g : groups_) {
    if (Status s = g->EnsureSchema(); !s) return s;
  }
  return OkStatus();
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

Result<std::vector<AppendOutcome>> GroupedMessageStore::Append(std::span<const AppendRequest> batch,
                                                               MaxSeqCache& max_seq_cache) {
  return AppendByGroup(batch, max_seq_cache, nullptr);
}

Result<std::vector<AppendOutcome>> GroupedMessageStore::AppendFenced(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing& fencing) {
  return AppendByGroup(batch, max_seq_cache, &fencing);
}

Result<int64_t> GroupedMessageStore::MaxSeq(std::string_view conv_id) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->MaxSeq(conv_id);
}

Result<std::vector<int64_t>> GroupedMessageStore::MaxSeqs(std::span<const std::string> conv_ids) {
  std::vector<std::vector<size_t>> index(groups_.size());
  std::vector<std::vector<std::string>> part(groups_.size());
  for (size_t i = 0; i < conv_ids.size(); ++i) {
    const size_t g = placement_.GroupOfKey(conv_ids[i]);
    if (g >= groups_.size()) return UnknownStoreGroup();
    index[g].push_back(i);
    part[g].push_back(conv_ids[i]);
  }
  std::vector<int64_t> out(conv_ids.size(), 0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (part[g].empty()) continue;
    auto got = groups_[g]->MaxSeqs(part[g]);
    if (!got) return got;
    for (size_t j = 0; j < got->size() && j < index[g].size(); ++j) out[index[g][j]] = (*got)[j];
  }
  return out;
}

Result<MessagePage> GroupedMessageStore::GetRange(const RangeQuery& query) {
  MessageStore* store = StoreOf(query.conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->GetRange(query);
}

Result<std::vector<StoredMessage>> GroupedMessageStore::GetBySeqs(std::string_view conv_id,
                                                                  std::span<const int64_t> seqs) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->GetBySeqs(conv_id, seqs);
}

Result<StoredMessage> GroupedMessageStore::SetStatus(std::string_view conv_id, int64_t seq,
                                                     MessageStatus status) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->SetStatus(conv_id, seq, status);
}

Result<int64_t> GroupedMessageStore::GetConvMinSeq(std::string_view conv_id) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->GetConvMinSeq(conv_id);
}

Status GroupedMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->SetConvMinSeq(conv_id, min_seq);
}

Result<std::optional<MemberState>> GroupedMessageStore::GetMember(std::string_view conv_id,
                                                                  std::string_view user_id) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->GetMember(conv_id, user_id);
}

Status GroupedMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                      const MemberState& state) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->PutMember(conv_id, user_id, state);
}

Result<MemberState> GroupedMessageStore::SetReadSeq(std::string_view conv_id,
                                                    std::string_view user_id, int64_t read_seq,
                                                    int64_t upper) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->SetReadSeq(conv_id, user_id, read_seq, upper);
}

Result<int64_t> GroupedMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                                 int64_t after_seq, int64_t upto_seq) {
  MessageStore* store = StoreOf(conv_id);
  if (store == nullptr) return UnknownStoreGroup();
  return store->CountUnread(conv_id, user_id, after_seq, upto_seq);
}

Status GroupedMessageStore::Ping() {
  for (auto& g : groups_) {
    if (Status s = g->Ping(); !s) return s;
  }
  return OkStatus();
}

}  // namespace seqd
