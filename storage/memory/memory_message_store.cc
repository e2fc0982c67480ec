#include "storage/memory/memory_message_store.h"

#include <algorithm>

namespace seqd {
namespace {

Error Unavailable() {
  return MakeError(ErrorCode::kStoreUnavailable, "memory message store: unavailable (test hook)");
}

}  // namespace

Status MemoryMessageStore::CheckAvailableLocked() const {
  if (!available_) return Unavailable();
  return OkStatus();
}

const std::vector<StoredMessage>* MemoryMessageStore::ConvLocked(std::string_view conv_id) const {
  auto it = convs_.find(conv_id);
  return it == convs_.end() ? nullptr : &it->second;
}

void MemoryMessageStore::SetAvailable(bool available) {
  MutexLock lock(mu_);
  available_ = available;
}

size_t MemoryMessageStore::append_calls() const {
  MutexLock lock(mu_);
  return append_calls_;
}

Status MemoryMessageStore::EnsureSchema() {
  MutexLock lock(mu_);
  return CheckAvailableLocked();
}

void MemoryMessageStore::SetFenceCheck(std::function<bool(const ShardFence&)> check) {
  MutexLock lock(mu_);
  fence_check_ = std::move(check);
}

Result<std::vector<AppendOutcome>> MemoryMessageStore::AppendFenced(
    std::span<const AppendRequest> batch, MaxSeqCache& max_seq_cache, AppendFencing& fencing) {
  {
    MutexLock lock(mu_);
    for (const ShardFence& f : fencing.fences) {
      if (fence_check_ && !fence_check_(f)) {
        fencing.refused = f.shard;
        return MakeError(ErrorCode::kNotServing, "shard no longer held");
      }
    }
  }
  return Append(batch, max_seq_cache);
}

Result<std::vector<AppendOutcome>> MemoryMessageStore::Append(std::span<const AppendRequest> batch,
                                                              MaxSeqCache& max_seq_cache) {
  MutexLock lock(mu_);
  ++append_calls_;
  auto fail = [&](Error e) -> Error {
    for (const AppendRequest& r : batch) max_seq_cache.erase(r.conv_id);
    return e;
  };
  if (!available_) return fail(Unavailable());

  // Plan the whole batch first so a failure stores nothing.
  std::vector<AppendOutcome> out;
  out.reserve(batch.size());
  std::map<ClientKey, size_t> batch_keys;  // -> index in out
  std::map<std::string, int64_t, std::less<>> next_max;
  std::set<int64_t> batch_ids;
  std::vector<size_t> fresh;  // indexes of requests to store
  for (size_t i = 0; i < batch.size(); ++i) {
    const AppendRequest& r = batch[i];
    ClientKey key{r.conv_id, r.sender_id, r.client_msg_id};
    if (auto it = by_client_.find(key); it != by_client_.end()) {
      const StoredMessage& m = convs_.find(it->second.first)->second[it->second.second - 1];
      const bool duplicate = m.server_msg_id != r.server_msg_id;
      const bool conflict =
          duplicate && message_store::ContentDiffers(r, m.content_type, m.payload, m.status);
      out.push_back(AppendOutcome{m.seq, m.server_msg_id, m.send_time_ms, duplicate, conflict});
      continue;
    }
    if (auto it = batch_keys.find(key); it != batch_keys.end()) {
      const AppendRequest& first = batch[it->second];  // stored by this batch
      AppendOutcome o = out[it->second];
      o.duplicate = true;
      o.conflict = message_store::ContentDiffers(r, first.content_type, first.payload,
                                                 MessageStatus::kNormal);
      out.push_back(o);
      continue;
    }
    if (server_msg_ids_.count(r.server_msg_id) || !batch_ids.insert(r.server_msg_id).second) {
      return fail(MakeError(ErrorCode::kInternal, "memory message store: server_msg_id " +
                                                      std::to_string(r.server_msg_id) +
                                                      " already stored"));
    }
    auto nm = next_max.find(r.conv_id);
    if (nm == next_max.end()) {
      const auto* msgs = ConvLocked(r.conv_id);
      nm = next_max.emplace(r.conv_id, msgs ? static_cast<int64_t>(msgs->size()) : 0).first;
    }
    const int64_t seq = ++nm->second;
    batch_keys.emplace(std::move(key), out.size());
    out.push_back(AppendOutcome{seq, r.server_msg_id, r.send_time_ms, false});
    fresh.push_back(i);
  }

  for (size_t i : fresh) {
    const AppendRequest& r = batch[i];
    const AppendOutcome& o = out[i];
    std::vector<StoredMessage>& msgs = convs_[r.conv_id];
    msgs.push_back(StoredMessage{r.conv_id, o.seq, r.server_msg_id, r.sender_id, r.client_msg_id,
                                 r.content_type, r.payload, r.send_time_ms,
                                 MessageStatus::kNormal});
    by_client_.emplace(ClientKey{r.conv_id, r.sender_id, r.client_msg_id},
                       std::make_pair(r.conv_id, o.seq));
    server_msg_ids_.insert(r.server_msg_id);
  }
  if (lose_commits_ > 0) {
    --lose_commits_;
    return fail(MakeError(ErrorCode::kStoreUnavailable,
                          "memory message store: commit outcome lost (test hook)"));
  }
  for (const AppendRequest& r : batch) {
    const auto* msgs = ConvLocked(r.conv_id);
    max_seq_cache[r.conv_id] = msgs ? static_cast<int64_t>(msgs->size()) : 0;
  }
  return out;
}

void MemoryMessageStore::LoseNextCommits(int n) {
  MutexLock lock(mu_);
  lose_commits_ = n;
}

Result<int64_t> MemoryMessageStore::MaxSeq(std::string_view conv_id) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  const auto* msgs = ConvLocked(conv_id);
  return msgs ? static_cast<int64_t>(msgs->size()) : int64_t{0};
}

Result<std::vector<int64_t>> MemoryMessageStore::MaxSeqs(std::span<const std::string> conv_ids) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  std::vector<int64_t> out;
  out.reserve(conv_ids.size());
  for (const std::string& c : conv_ids) {
    const auto* msgs = ConvLocked(c);
    out.push_back(msgs ? static_cast<int64_t>(msgs->size()) : 0);
  }
  return out;
}

Result<MessagePage> MemoryMessageStore::GetRange(const RangeQuery& q) {
  if (Status valid = message_store::CheckRange(q); !valid.ok()) return valid.error();
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  MessagePage page;
  const auto* msgs = ConvLocked(q.conv_id);
  if (msgs == nullptr || msgs->empty()) return page;
  const int64_t lo = std::max<int64_t>(q.from_seq, 1);
  const int64_t hi = std::min<int64_t>(q.to_seq, static_cast<int64_t>(msgs->size()));
  if (lo > hi) return page;
  const auto count = static_cast<uint64_t>(hi - lo + 1);
  const size_t n = count < q.limit ? static_cast<size_t>(count) : q.limit;
  for (size_t i = 0; i < n; ++i) {
    const int64_t seq = q.descending ? hi - static_cast<int64_t>(i) : lo + static_cast<int64_t>(i);
    page.messages.push_back((*msgs)[seq - 1]);
  }
  page.more = count > n;
  return page;
}

Result<std::vector<StoredMessage>> MemoryMessageStore::GetBySeqs(std::string_view conv_id,
                                                                 std::span<const int64_t> seqs) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  std::vector<StoredMessage> out;
  const auto* msgs = ConvLocked(conv_id);
  if (msgs == nullptr) return out;
  std::vector<int64_t> sorted(seqs.begin(), seqs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int64_t s : sorted) {
    if (s >= 1 && s <= static_cast<int64_t>(msgs->size())) out.push_back((*msgs)[s - 1]);
  }
  return out;
}

Result<StoredMessage> MemoryMessageStore::SetStatus(std::string_view conv_id, int64_t seq,
                                                    MessageStatus status) {
  if (Status valid = message_store::CheckNewStatus(status); !valid.ok()) return valid.error();
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  auto it = convs_.find(conv_id);
  if (it == convs_.end() || seq < 1 || seq > static_cast<int64_t>(it->second.size())) {
    return MakeError(ErrorCode::kNotFound, "no such message");
  }
  StoredMessage& m = it->second[seq - 1];
  m.status = status;
  m.payload.clear();
  return m;
}

Result<int64_t> MemoryMessageStore::GetConvMinSeq(std::string_view conv_id) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  auto it = conv_min_seq_.find(conv_id);
  return it == conv_min_seq_.end() ? int64_t{1} : it->second;
}

Status MemoryMessageStore::SetConvMinSeq(std::string_view conv_id, int64_t min_seq) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  conv_min_seq_.insert_or_assign(std::string(conv_id), min_seq);
  return OkStatus();
}

Result<std::optional<MemberState>> MemoryMessageStore::GetMember(std::string_view conv_id,
                                                                 std::string_view user_id) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  auto it = members_.find(MemberKey(conv_id, user_id));
  if (it == members_.end()) return std::optional<MemberState>();
  return std::optional<MemberState>(it->second);
}

Status MemoryMessageStore::PutMember(std::string_view conv_id, std::string_view user_id,
                                     const MemberState& state) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  members_.insert_or_assign(MemberKey(conv_id, user_id), state);
  return OkStatus();
}

Result<MemberState> MemoryMessageStore::SetReadSeq(std::string_view conv_id,
                                                   std::string_view user_id, int64_t read_seq,
                                                   int64_t upper) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  auto it = members_.find(MemberKey(conv_id, user_id));
  if (it == members_.end()) return MakeError(ErrorCode::kNotFound, "not a member");
  if (read_seq < it->second.read_seq) {
    return MakeError(ErrorCode::kFailedPrecondition, "read_seq " + std::to_string(read_seq) +
                                                         " is below the stored read_seq " +
                                                         std::to_string(it->second.read_seq));
  }
  if (read_seq > upper) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "read_seq " + std::to_string(read_seq) + " is above " + std::to_string(upper));
  }
  it->second.read_seq = read_seq;
  return it->second;
}

Result<int64_t> MemoryMessageStore::CountUnread(std::string_view conv_id, std::string_view user_id,
                                                int64_t after_seq, int64_t upto_seq) {
  MutexLock lock(mu_);
  if (!available_) return Unavailable();
  const auto* msgs = ConvLocked(conv_id);
  if (msgs == nullptr) return int64_t{0};
  int64_t n = 0;
  const int64_t lo = std::max<int64_t>(after_seq + 1, 1);
  const int64_t hi = std::min<int64_t>(upto_seq, static_cast<int64_t>(msgs->size()));
  for (int64_t s = lo; s <= hi; ++s) {
    const StoredMessage& m = (*msgs)[s - 1];
    if (m.status == MessageStatus::kNormal && m.sender_id != user_id) ++n;
  }
  return n;
}

Status MemoryMessageStore::Ping() {
  MutexLock lock(mu_);
  return CheckAvailableLocked();
}

}  // namespace seqd
