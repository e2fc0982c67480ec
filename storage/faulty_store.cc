#include "storage/faulty_store.h"

#include <thread>

namespace seqd {

void FaultyStore::SetHold(bool hold) {
  MutexLock lock(hold_mu_);
  hold_ = hold;
  if (!hold) {
    ++generation_;
    hold_cv_.notify_all();
  }
}

void FaultyStore::Release() {
  MutexLock lock(hold_mu_);
  ++generation_;
  hold_cv_.notify_all();
}

Status FaultyStore::Inject() {
  if (int64_t ms = latency_ms_.load(); ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  if (down_) return MakeError(ErrorCode::kStoreUnavailable, "injected: store down");
  return OkStatus();
}

Status FaultyStore::EnsureSchema() {
  if (auto s = Inject(); !s) return s;
  return inner_.EnsureSchema();
}

Result<ReservedSegment> FaultyStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  ++reserve_calls_;
  {
    MutexLock lock(hold_mu_);
    const uint64_t gen = generation_;
    hold_cv_.wait(lock.native(), [&]() REQUIRES(hold_mu_) { return !hold_ || generation_ != gen; });
  }
  if (auto s = Inject(); !s) return s.error();
  return inner_.Reserve(key, step);
}

std::vector<Result<ReservedSegment>> FaultyStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  ++reserve_batches_;
  for (const ReserveRequest& r : requests) {
    if (r.token.empty()) continue;
    if (Status s = Inject(); !s) {
      return std::vector<Result<ReservedSegment>>(requests.size(), s.error());
    }
    return inner_.ReserveMany(requests);
  }
  return SegmentStore::ReserveMany(requests);
}

Result<int64_t> FaultyStore::PruneBlockTokens(int64_t before_unix_ms) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.PruneBlockTokens(before_unix_ms);
}

Status FaultyStore::CreateKeys(const std::vector<NewKey>& keys, std::string_view description) {
  ++create_batches_;
  return SegmentStore::CreateKeys(keys, description);
}

Result<KeyRow> FaultyStore::CreateKey(std::string_view key, int64_t step,
                                      std::string_view description) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.CreateKey(key, step, description);
}

Result<std::vector<int64_t>> FaultyStore::GetMaxIds(const std::vector<std::string>& keys) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.GetMaxIds(keys);
}

Result<std::vector<int64_t>> FaultyStore::GetAllocTimes(const std::vector<std::string>& keys) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.GetAllocTimes(keys);
}

Result<std::vector<int64_t>> FaultyStore::GetUserSeqs(std::string_view user, UserSeqField field,
                                                     const std::vector<std::string>& convs) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.GetUserSeqs(user, field, convs);
}

Status FaultyStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                const std::vector<UserSeqValue>& values) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.SetUserSeqs(user, field, raise_only, values);
}

Result<std::vector<int64_t>> FaultyStore::GetMinSeqs(const std::vector<std::string>& keys) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.GetMinSeqs(keys);
}

Status FaultyStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                               const std::vector<ShardFence>& fences, uint32_t* refused_shard) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.SetMinSeqs(values, fences, refused_shard);
}

Result<KeyRow> FaultyStore::GetKey(std::string_view key) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.GetKey(key);
}

Result<std::vector<KeyRow>> FaultyStore::ListKeys(std::string_view after, size_t limit) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.ListKeys(after, limit);
}

Result<KeyRow> FaultyStore::SetStep(std::string_view key, int64_t step) {
  if (auto s = Inject(); !s) return s.error();
  return inner_.SetStep(key, step);
}

Status FaultyStore::Ping() {
  if (auto s = Inject(); !s) return s;
  return inner_.Ping();
}

}  // namespace seqd
