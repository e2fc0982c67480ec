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
#include <vector>

#include "storage/message_store.h"
#include "storage/store_placement.h"

namespace seqd {

class GroupedMessageStore final : public MessageStore {
 public:
  // groups[i] is placement.groups()[i]'s store; `placement` must outlive
  // this store.
  GroupedMessageStore(std::vector<std::unique_ptr<MessageStore>> groups,
                      const StorePlacement& placement);

  Status EnsureSchema() override;
  bool KeepsTrailingSpaces() const override;
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& max_seq_cache) override;
  Result<std::vector<AppendOutcome>> AppendFenced(std::span<const AppendRequest> batch,
                                                  MaxSeqCache& max_seq_cache,
                                                  AppendFencing& fencing) override;
  Result<int64_t> MaxSeq(std::string_view conv_id) override;
  Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string> conv_ids) override;
  Result<MessagePage> GetRange(const RangeQuery& query) override;
  Result<std::vector<StoredMessage>> GetBySeqs(std::string_view conv_id,
                                               std::span<const int64_t> seqs) override;
  Result<StoredMessage> SetStatus(std::string_view conv_id, int64_t seq,
                                  MessageStatus status) override;
  Result<int64_t> GetConvMinSeq(std::string_view conv_id) override;
  Status SetConvMinSeq(std::string_view conv_id, int64_t min_seq) override;
  Result<std::optional<MemberState>> GetMember(std::string_view conv_id,
                                               std::string_view user_id) override;
  Status PutMember(std::string_view conv_id, std::string_view user_id,
                   const MemberState& state) override;
  Result<MemberState> SetReadSeq(std::string_view conv_id, std::string_view user_id,
                                 int64_t read_seq, int64_t upper) override;
  Result<int64_t> CountUnread(std::string_view conv_id, std::string_view user_id, int64_t after_seq,
                              int64_t upto_seq) override;
  Status Ping() override;

  // Group `index`'s own store (0: home), for the shard mover.
  MessageStore& group(size_t index) { return *groups_[index]; }

 private:
  // The store of `conv_id`'s group, or null for a group unknown here.
  MessageStore* StoreOf(std::string_view conv_id) const;
  // Append of each group's part; `fencing` null: unfenced.
  Result<std::vector<AppendOutcome>> AppendByGroup(std::span<const AppendRequest> batch,
                                                   MaxSeqCache& max_seq_cache,
                                                   AppendFencing* fencing);

  std::vector<std::unique_ptr<MessageStore>> groups_;
  const StorePlacement& placement_;
};

}  // namespace seqd
