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

Status FaultyStore::Admit() {
  if (int64_t ms = latency_ms_.load(); ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  if (down_) return MakeError(ErrorCode::kStoreUnavailable, "injected: store down");
  return OkStatus();
}

Result<ReservedSegment> FaultyStore::Reserve(std::string_view key, std::optional<int64_t> step) {
  ++reserve_calls_;
  {
    MutexLock lock(hold_mu_);
    const uint64_t gen = generation_;
    hold_cv_.wait(lock.native(), [&]() REQUIRES(hold_mu_) { return !hold_ || generation_ != gen; });
  }
  return GatedSegmentStore::Reserve(key, step);
}

std::vector<Result<ReservedSegment>> FaultyStore::ReserveMany(
    const std::vector<ReserveRequest>& requests) {
  ++reserve_batches_;
  for (const ReserveRequest& r : requests) {
    if (!r.token.empty()) return GatedSegmentStore::ReserveMany(requests);
  }
  return SegmentStore::ReserveMany(requests);
}

Status FaultyStore::CreateKeys(const std::vector<NewKey>& keys, std::string_view description) {
  ++create_batches_;
  return SegmentStore::CreateKeys(keys, description);
}

void FaultyStore::ReserveEach(const std::vector<ReserveRequest>& requests,
                              const ReserveLanded& landed) {
  SegmentStore::ReserveEach(requests, landed);
}

}  // namespace seqd
