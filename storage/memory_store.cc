#include "storage/memory_store.h"

#include <limits>

namespace seqd {

Status MemoryStore::EnsureSchema() { return OkStatus(); }

Result<ReservedSegment> MemoryStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  MutexLock lock(mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return MakeError(ErrorCode::kUnknownKey, "no such key");
  KeyRow& row = it->second;
  const int64_t by = step.value_or(row.step);
  if (by > 0 && row.max_id > std::numeric_limits<int64_t>::max() - by) {
    return MakeError(ErrorCode::kInternal, "memory reserve: max_id overflow");
  }
  row.max_id += by;
  return ReservedSegment{row.max_id - by, row.max_id - 1, row.step};
}

Result<KeyRow> MemoryStore::CreateKey(std::string_view key, int64_t step,
                                      std::string_view description) {
  MutexLock lock(mu_);
  if (rows_.count(key)) return MakeError(ErrorCode::kKeyExists, "key exists");
  KeyRow row{std::string(key), 1, step, std::string(description), 0};
  rows_.emplace(row.key, row);
  return row;
}

Result<KeyRow> MemoryStore::GetKey(std::string_view key) {
  MutexLock lock(mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return MakeError(ErrorCode::kUnknownKey, "no such key");
  return it->second;
}

Result<std::vector<KeyRow>> MemoryStore::ListKeys(std::string_view after, size_t limit) {
  MutexLock lock(mu_);
  std::vector<KeyRow> out;
  for (auto it = rows_.upper_bound(after); it != rows_.end() && out.size() < limit; ++it) {
    out.push_back(it->second);
  }
  return out;
}

Result<KeyRow> MemoryStore::SetStep(std::string_view key, int64_t step) {
  MutexLock lock(mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return MakeError(ErrorCode::kUnknownKey, "no such key");
  it->second.step = step;
  return it->second;
}

Result<std::vector<int64_t>> MemoryStore::GetMinSeqs(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    auto it = min_seqs_.find(k);
    out.push_back(it == min_seqs_.end() ? 0 : it->second);
  }
  return out;
}

Status MemoryStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                               const std::vector<ShardFence>& fences, uint32_t* refused_shard) {
  (void)refused_shard;
  if (!fences.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no cluster mode");
  }
  MutexLock lock(mu_);
  for (const MinSeqValue& v : values) min_seqs_[v.key] = v.min_seq;
  return OkStatus();
}

Status MemoryStore::Ping() { return OkStatus(); }

void MemoryStore::DeleteKey(std::string_view key) {
  MutexLock lock(mu_);
  auto it = rows_.find(key);
  if (it != rows_.end()) rows_.erase(it);
}

}  // namespace seqd
