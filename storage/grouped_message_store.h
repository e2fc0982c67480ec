// A MessageStore over several store groups (docs/cluster.md, "Store
// groups"): every call goes to the group the placement puts the
// conversation's shard in. An Append batch of conversations in several
// groups is one transaction per group, so a failure may leave some groups'
// part stored: the caller then acknowledges nothing and may re-send, which
// Append answers as if the first try had succeeded (its contract).
//
// Thread safety: as the group stores; the placement is shared and safe.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/message_store.h"
#include "storage/store_calls.h"
#include "storage/store_placement.h"

namespace seqd {

class GroupedMessageStore final : public MessageStore {
 public:
  // groups[i] is placement.groups()[i]'s store; `placement` must outlive
  // this store.
  GroupedMessageStore(std::vector<std::unique_ptr<MessageStore>> groups,
                      const StorePlacement& placement);

  Status EnsureSchema() override { return CallEach(groups_, &MessageStore::EnsureSchema); }
  // True only if every group keeps them.
  bool KeepsTrailingSpaces() const override;
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& max_seq_cache) override {
    return AppendByGroup(batch, max_seq_cache, nullptr);
  }
  Result<std::vector<AppendOutcome>> AppendFenced(std::span<const AppendRequest> batch,
                                                  MaxSeqCache& max_seq_cache,
                                                  AppendFencing& fencing) override {
    return AppendByGroup(batch, max_seq_cache, &fencing);
  }
  Result<int64_t> MaxSeq(std::string_view conv_id) override {
    return OnConvsGroup(conv_id, &MessageStore::MaxSeq, conv_id);
  }
  Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string> conv_ids) override {
    auto group_of = [this](std::string_view conv) { return placement_.GroupOfKey(conv); };
    return ReadByGroup(groups_, conv_ids, group_of, &UnknownStoreGroup,
                       [](MessageStore& s, const auto& part) { return s.MaxSeqs(part); });
  }
  Result<MessagePage> GetRange(const RangeQuery& query) override {
    return OnConvsGroup(query.conv_id, &MessageStore::GetRange, query);
  }
  Result<std::vector<StoredMessage>> GetBySeqs(std::string_view conv_id,
                                               std::span<const int64_t> seqs) override {
    return OnConvsGroup(conv_id, &MessageStore::GetBySeqs, conv_id, seqs);
  }
  Result<StoredMessage> SetStatus(std::string_view conv_id, int64_t seq,
                                  MessageStatus status) override {
    return OnConvsGroup(conv_id, &MessageStore::SetStatus, conv_id, seq, status);
  }
  Result<int64_t> GetConvMinSeq(std::string_view conv_id) override {
    return OnConvsGroup(conv_id, &MessageStore::GetConvMinSeq, conv_id);
  }
  Status SetConvMinSeq(std::string_view conv_id, int64_t min_seq) override {
    return OnConvsGroup(conv_id, &MessageStore::SetConvMinSeq, conv_id, min_seq);
  }
  Result<std::optional<MemberState>> GetMember(std::string_view conv_id,
                                               std::string_view user_id) override {
    return OnConvsGroup(conv_id, &MessageStore::GetMember, conv_id, user_id);
  }
  Status PutMember(std::string_view conv_id, std::string_view user_id,
                   const MemberState& state) override {
    return OnConvsGroup(conv_id, &MessageStore::PutMember, conv_id, user_id, state);
  }
  Result<MemberState> SetReadSeq(std::string_view conv_id, std::string_view user_id,
                                 int64_t read_seq, int64_t upper) override {
    return OnConvsGroup(conv_id, &MessageStore::SetReadSeq, conv_id, user_id, read_seq, upper);
  }
  Result<int64_t> CountUnread(std::string_view conv_id, std::string_view user_id, int64_t after_seq,
                              int64_t upto_seq) override {
    return OnConvsGroup(conv_id, &MessageStore::CountUnread, conv_id, user_id, after_seq, upto_seq);
  }
  Status Ping() override { return CallEach(groups_, &MessageStore::Ping); }

  // Group `index`'s own store (0: home), for the shard mover.
  MessageStore& group(size_t index) { return *groups_[index]; }

 private:
  // The store of `conv_id`'s group, or null for a group unknown here.
  MessageStore* StoreOf(std::string_view conv_id) const;
  // `call` on the store of `conv_id`'s group, or UnknownStoreGroup().
  template <class R, class... Params, class... Args>
  R OnConvsGroup(std::string_view conv_id, R (MessageStore::*call)(Params...), Args&&... args) {
    return CallOrRefuse(StoreOf(conv_id), &UnknownStoreGroup, call, std::forward<Args>(args)...);
  }
  // Append of each group's part; `fencing` null: unfenced.
  Result<std::vector<AppendOutcome>> AppendByGroup(std::span<const AppendRequest> batch,
                                                   MaxSeqCache& max_seq_cache,
                                                   AppendFencing* fencing);

  std::vector<std::unique_ptr<MessageStore>> groups_;
  const StorePlacement& placement_;
};

}  // namespace seqd
