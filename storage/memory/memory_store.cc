#include "storage/memory/memory_store.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "storage/keyed_values.h"
#include "storage/unix_millis.h"

namespace seqd {

Status MemoryStore::EnsureSchema() { return OkStatus(); }

Result<ReservedSegment> MemoryStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  MutexLock lock(mu_);
  return ReserveLocked(key, step);
}

Result<ReservedSegment> MemoryStore::ReserveLocked(std::string_view key,
                                                   std::optional<int64_t> step) {
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

std::vector<Result<ReservedSegment>> MemoryStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  if (Status created = CreateRequestedRows(requests); !created) {
    return std::vector<Result<ReservedSegment>>(requests.size(), created.error());
  }
  std::vector<Result<ReservedSegment>> out;
  out.reserve(requests.size());
  MutexLock lock(mu_);
  for (const ReserveRequest& r : requests) {
    if (r.fence) {
      out.push_back(NoClusterMode());
    } else if (r.step && *r.step <= 0) {
      out.push_back(MakeError(ErrorCode::kInvalidArgument, "memory reserve: step must be > 0"));
    } else {
      out.push_back(r.token.empty() ? ReserveLocked(r.key, r.step) : ReserveTokenedLocked(r));
      if (r.stamp_time && out.back() && !out.back()->replayed) {
        int64_t& at = alloc_ms_[r.key];
        at = std::max(at, UnixMillisNow());
      }
    }
  }
  return out;
}

Result<std::vector<int64_t>> MemoryStore::GetAllocTimes(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    auto row = rows_.find(k);
    auto stamped = alloc_ms_.find(k);
    if (row == rows_.end()) {
      out.push_back(-1);
    } else {
      out.push_back(stamped == alloc_ms_.end() ? row->second.update_time_ms : stamped->second);
    }
  }
  return out;
}

Result<ReservedSegment> MemoryStore::ReserveTokenedLocked(const ReserveRequest& r) {
  if (!r.step) return MakeError(ErrorCode::kInvalidArgument, "a token needs a count");
  const auto id = std::make_pair(r.key, std::string(r.token));
  if (auto it = tokens_.find(id); it != tokens_.end()) {
    ReservedSegment range = it->second.range;
    if (range.last - range.first + 1 != *r.step) {
      return MakeError(ErrorCode::kInvalidArgument, "token already used with another count");
    }
    range.replayed = true;
    return range;
  }
  Result<ReservedSegment> range = ReserveLocked(r.key, r.step);
  if (range) tokens_[id] = TokenBlock{*range, UnixMillisNow()};
  return range;
}

Result<int64_t> MemoryStore::PruneBlockTokens(int64_t before_unix_ms) {
  MutexLock lock(mu_);
  int64_t pruned = 0;
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (it->second.created_ms < before_unix_ms) {
      it = tokens_.erase(it);
      ++pruned;
    } else {
      ++it;
    }
  }
  return pruned;
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
  return ValuesInOrder(keys, min_seqs_, 0);
}

Status MemoryStore::SetMinSeqs(const std::vector<MinSeqValue>& values,
                               const std::vector<ShardFence>& fences, uint32_t* refused_shard) {
  (void)refused_shard;
  if (!fences.empty()) return NoClusterMode();
  MutexLock lock(mu_);
  for (const MinSeqValue& v : values) min_seqs_[v.key] = v.min_seq;
  return OkStatus();
}

Result<std::vector<int64_t>> MemoryStore::GetUserSeqs(std::string_view user, UserSeqField field,
                                                     const std::vector<std::string>& convs) {
  MutexLock lock(mu_);
  const size_t at = static_cast<size_t>(field) - 1;
  std::vector<int64_t> out;
  out.reserve(convs.size());
  for (const std::string& conv : convs) {
    auto it = user_seqs_.find({std::string(user), conv});
    out.push_back(it == user_seqs_.end() ? 0 : it->second[at]);
  }
  return out;
}

Status MemoryStore::SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                                const std::vector<UserSeqValue>& values) {
  MutexLock lock(mu_);
  const size_t at = static_cast<size_t>(field) - 1;
  for (const UserSeqValue& v : values) {
    int64_t& seq = user_seqs_[{std::string(user), v.conv}][at];
    seq = raise_only ? std::max(seq, v.seq) : v.seq;
  }
  return OkStatus();
}

Status MemoryStore::Ping() { return OkStatus(); }

void MemoryStore::DeleteKey(std::string_view key) {
  MutexLock lock(mu_);
  auto it = rows_.find(key);
  if (it != rows_.end()) rows_.erase(it);
}

}  // namespace seqd
