#include "storage/gated_segment_store.h"

namespace seqd {

Status GatedSegmentStore::EnsureSchema() {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.EnsureSchema();
}

Result<ReservedSegment> GatedSegmentStore::Reserve(std::string_view key,
                                                   std::optional<int64_t> step) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.Reserve(key, step);
}

Result<ReservedSegment> GatedSegmentStore::ReserveFenced(std::string_view key,
                                                         std::optional<int64_t> step,
                                                         const ShardFence& fence) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.ReserveFenced(key, step, fence);
}

std::vector<Result<ReservedSegment>> GatedSegmentStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  if (Status gate = Admit(); !gate.ok()) {
    return std::vector<Result<ReservedSegment>>(requests.size(), gate.error());
  }
  return inner_.ReserveMany(requests);
}

void GatedSegmentStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                                    const ReserveLanded& landed) {
  if (Status gate = Admit(); !gate.ok()) {
    for (size_t i = 0; i < requests.size(); ++i) landed(i, gate.error());
    return;
  }
  inner_.ReserveEach(requests, landed);
}

Result<int64_t> GatedSegmentStore::PruneBlockTokens(int64_t before_unix_ms) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.PruneBlockTokens(before_unix_ms);
}

Status GatedSegmentStore::CreateKeys(const std::vector<NewKey>& keys,
                                     std::string_view description) {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.CreateKeys(keys, description);
}

Result<KeyRow> GatedSegmentStore::CreateKey(std::string_view key, int64_t step,
                                            std::string_view description) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.CreateKey(key, step, description);
}

Result<KeyRow> GatedSegmentStore::GetKey(std::string_view key) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.GetKey(key);
}

Result<std::vector<KeyRow>> GatedSegmentStore::ListKeys(std::string_view after, size_t limit) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.ListKeys(after, limit);
}

Result<KeyRow> GatedSegmentStore::SetStep(std::string_view key, int64_t step) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.SetStep(key, step);
}

Result<std::vector<int64_t>> GatedSegmentStore::GetMaxIds(const std::vector<std::string>& keys) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.GetMaxIds(keys);
}

Result<std::vector<int64_t>> GatedSegmentStore::GetAllocTimes(
    const std::vector<std::string>& keys) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.GetAllocTimes(keys);
}

Result<std::vector<int64_t>> GatedSegmentStore::GetMinSeqs(const std::vector<std::string>& keys) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.GetMinSeqs(keys);
}

Status GatedSegmentStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                                     const std::vector<ShardFence>& fences,
                                     uint32_t* refused_shard) {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.SetMinSeqs(values, fences, refused_shard);
}

Result<std::vector<int64_t>> GatedSegmentStore::GetUserSeqs(std::string_view user,
                                                            UserSeqField field,
                                                            const std::vector<std::string>& convs) {
  if (Status gate = Admit(); !gate.ok()) return gate.error();
  return inner_.GetUserSeqs(user, field, convs);
}

Status GatedSegmentStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                      const std::vector<UserSeqValue>& values) {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.SetUserSeqs(user, field, raise_only, values);
}

Status GatedSegmentStore::Ping() {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.Ping();
}

Status GatedSegmentStore::Warm() {
  if (Status gate = Admit(); !gate.ok()) return gate;
  return inner_.Warm();
}

}  // namespace seqd
