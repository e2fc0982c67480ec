#include "storage/store_shedding.h"

namespace seqd {

Status SheddingSegmentStore::EnsureSchema() {
  if (ShedThisThread()) return ShedError();
  return inner_->EnsureSchema();
}

Result<ReservedSegment> SheddingSegmentStore::Reserve(std::string_view key,
                                                      std::optional<int64_t> step) {
  if (ShedThisThread()) return ShedError();
  return inner_->Reserve(key, step);
}

Result<ReservedSegment> SheddingSegmentStore::ReserveFenced(std::string_view key,
                                                            std::optional<int64_t> step,
                                                            const ShardFence& fence) {
  if (ShedThisThread()) return ShedError();
  return inner_->ReserveFenced(key, step, fence);
}

std::vector<Result<ReservedSegment>> SheddingSegmentStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  if (ShedThisThread()) return std::vector<Result<ReservedSegment>>(requests.size(), ShedError());
  return inner_->ReserveMany(requests);
}

void SheddingSegmentStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                                       const ReserveLanded& landed) {
  if (!ShedThisThread()) return inner_->ReserveEach(requests, landed);
  for (size_t i = 0; i < requests.size(); ++i) landed(i, ShedError());
}

Status SheddingSegmentStore::CreateKeys(const std::vector<NewKey>& keys,
                                        std::string_view description) {
  if (ShedThisThread()) return ShedError();
  return inner_->CreateKeys(keys, description);
}

Result<KeyRow> SheddingSegmentStore::CreateKey(std::string_view key, int64_t step,
                                               std::string_view description) {
  if (ShedThisThread()) return ShedError();
  return inner_->CreateKey(key, step, description);
}

Result<std::vector<int64_t>> SheddingSegmentStore::GetMaxIds(const std::vector<std::string>& keys) {
  if (ShedThisThread()) return ShedError();
  return inner_->GetMaxIds(keys);
}

Result<std::vector<int64_t>> SheddingSegmentStore::GetAllocTimes(
    const std::vector<std::string>& keys) {
  if (ShedThisThread()) return ShedError();
  return inner_->GetAllocTimes(keys);
}

Result<std::vector<int64_t>> SheddingSegmentStore::GetUserSeqs(
    std::string_view user, UserSeqField field, const std::vector<std::string>& convs) {
  if (ShedThisThread()) return ShedError();
  return inner_->GetUserSeqs(user, field, convs);
}

Status SheddingSegmentStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                         const std::vector<UserSeqValue>& values) {
  if (ShedThisThread()) return ShedError();
  return inner_->SetUserSeqs(user, field, raise_only, values);
}

Result<std::vector<int64_t>> SheddingSegmentStore::GetMinSeqs(
    const std::vector<std::string>& keys) {
  if (ShedThisThread()) return ShedError();
  return inner_->GetMinSeqs(keys);
}

Result<int64_t> SheddingSegmentStore::PruneBlockTokens(int64_t before_unix_ms) {
  if (ShedThisThread()) return ShedError();
  return inner_->PruneBlockTokens(before_unix_ms);
}

Status SheddingSegmentStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                                        const std::vector<ShardFence>& fences,
                                        uint32_t* refused_shard) {
  if (ShedThisThread()) return ShedError();
  return inner_->SetMinSeqs(values, fences, refused_shard);
}

Result<KeyRow> SheddingSegmentStore::GetKey(std::string_view key) {
  if (ShedThisThread()) return ShedError();
  return inner_->GetKey(key);
}

Result<std::vector<KeyRow>> SheddingSegmentStore::ListKeys(std::string_view after, size_t limit) {
  if (ShedThisThread()) return ShedError();
  return inner_->ListKeys(after, limit);
}

Result<KeyRow> SheddingSegmentStore::SetStep(std::string_view key, int64_t step) {
  if (ShedThisThread()) return ShedError();
  return inner_->SetStep(key, step);
}

Status SheddingSegmentStore::Ping() {
  if (ShedThisThread()) return ShedError();
  return inner_->Ping();
}

Status SheddingSegmentStore::Warm() {
  if (ShedThisThread()) return ShedError();
  return inner_->Warm();
}

}  // namespace seqd
