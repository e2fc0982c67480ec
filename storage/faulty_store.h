// A SegmentStore wrapper that injects latency and failures, for tests.
// Modeled on leveldb's FaultInjectionTestEnv.
//
// Every call goes through the faults (GatedSegmentStore: the latency, then
// "down"); a batch without block tokens, and CreateKeys, run their
// single-key calls one by one, each through the faults (and Reserve's hold).
//
// Thread safety: all methods are safe to call concurrently; the knobs may be
// changed while calls are in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>

#include "common/mutex.h"
#include "storage/gated_segment_store.h"

namespace seqd {

class FaultyStore final : public GatedSegmentStore {
 public:
  // Does not take ownership; `inner` must outlive this wrapper.
  explicit FaultyStore(SegmentStore& inner) : GatedSegmentStore(inner) {}

  // Every call sleeps this long before reaching the inner store.
  void SetLatency(std::chrono::milliseconds latency) { latency_ms_ = latency.count(); }
  // While set, every call fails with kStoreUnavailable ("store down").
  void SetDown(bool down) { down_ = down; }
  // While set, Reserve() calls block until Release() (or SetHold(false)).
  void SetHold(bool hold) EXCLUDES(hold_mu_);
  // Lets all held Reserve() calls proceed.
  void Release() EXCLUDES(hold_mu_);

  int64_t reserve_calls() const { return reserve_calls_; }
  // ReserveMany and CreateKeys calls (each one transaction on a real store).
  int64_t reserve_batches() const { return reserve_batches_; }
  int64_t create_batches() const { return create_batches_; }

  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override;
  // Both run the single-key calls, one per item (faults included); a batch
  // with a block token goes whole to the inner store (latency and down
  // applied once, hold not).
  std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) override;
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override;
  // ReserveMany's results, in order (SegmentStore's own).
  void ReserveEach(const std::vector<ReserveRequest>& requests,
                   const ReserveLanded& landed) override;

 private:
  // Applies latency; returns an error if the store is "down".
  Status Admit() override;

  std::atomic<int64_t> latency_ms_{0};
  std::atomic<bool> down_{false};
  std::atomic<int64_t> reserve_calls_{0};
  std::atomic<int64_t> reserve_batches_{0};
  std::atomic<int64_t> create_batches_{0};
  Mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool hold_ GUARDED_BY(hold_mu_) = false;
  uint64_t generation_ GUARDED_BY(hold_mu_) = 0;  // bumped by Release()
};

}  // namespace seqd
