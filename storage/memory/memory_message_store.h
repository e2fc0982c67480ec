// In-memory MessageStore for tests and benchmarks. Same semantics as the SQL
// stores; nothing survives the process.
//
// Thread safety: all methods are safe to call concurrently (one mutex).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "storage/message_store.h"

namespace seqd {

class MemoryMessageStore final : public MessageStore {
 public:
  MemoryMessageStore() = default;

  Status EnsureSchema() override;
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& max_seq_cache) override;
  // Cluster mode for tests: each fence is checked with the hook set by
  // SetFenceCheck (none set: every fence holds).
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

  // Test hook: while false, every call returns kStoreUnavailable (and Append
  // erases the batch's cache entries, as on any failure).
  void SetAvailable(bool available) EXCLUDES(mu_);

  // Number of Append calls that reached the store (failed ones included).
  size_t append_calls() const EXCLUDES(mu_);

  // Test hook: the next `n` Append calls store their batch and then return
  // kStoreUnavailable, as a COMMIT with an unknown outcome that did commit.
  void LoseNextCommits(int n) EXCLUDES(mu_);

  // Test hook: whether a fence still holds (the lease table of a test).
  void SetFenceCheck(std::function<bool(const ShardFence&)> check) EXCLUDES(mu_);

 private:
  using ClientKey = std::tuple<std::string, std::string, std::string>;  // conv, sender, client
  using MemberKey = std::pair<std::string, std::string>;                // conv, user

  Status CheckAvailableLocked() const REQUIRES(mu_);
  const std::vector<StoredMessage>* ConvLocked(std::string_view conv_id) const REQUIRES(mu_);

  mutable Mutex mu_;
  int lose_commits_ GUARDED_BY(mu_) = 0;
  std::function<bool(const ShardFence&)> fence_check_ GUARDED_BY(mu_);
  bool available_ GUARDED_BY(mu_) = true;
  size_t append_calls_ GUARDED_BY(mu_) = 0;
  // conv_id -> messages; messages[i].seq == i + 1.
  std::map<std::string, std::vector<StoredMessage>, std::less<>> convs_ GUARDED_BY(mu_);
  // (conv, sender, client id) -> (conv, seq).
  std::map<ClientKey, std::pair<std::string, int64_t>> by_client_ GUARDED_BY(mu_);
  std::set<int64_t> server_msg_ids_ GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> conv_min_seq_ GUARDED_BY(mu_);
  std::map<MemberKey, MemberState> members_ GUARDED_BY(mu_);
};

}  // namespace seqd
