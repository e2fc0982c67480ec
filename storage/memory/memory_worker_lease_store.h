// In-memory WorkerLeaseStore for tests. Same semantics as the SQL stores;
// nothing survives the process.
//
// The store clock is a function: the system clock by default, a manual one
// in tests (so expiry needs no sleeping).
//
// Thread safety: all methods are safe to call concurrently (one mutex; the
// clock is called under it).
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "common/mutex.h"
#include "storage/worker_lease_store.h"

namespace seqd {

class MemoryWorkerLeaseStore final : public WorkerLeaseStore {
 public:
  // `now_ms` is the store clock in unix millis; empty means the system clock.
  explicit MemoryWorkerLeaseStore(std::function<int64_t()> now_ms = {});

  Status EnsureSchema() override;
  Result<WorkerLease> Claim(const ClaimRequest& r) override;
  Result<WorkerLease> Renew(int worker_id, std::string_view instance, int64_t ttl_ms,
                            int64_t time_bound_ms) override;
  Status Release(int worker_id, std::string_view instance, int64_t time_bound_ms) override;
  Result<std::vector<WorkerLease>> List() override;

 private:
  const std::function<int64_t()> now_ms_;
  Mutex mu_;
  std::map<int, WorkerLease> rows_ GUARDED_BY(mu_);  // by worker id
};

}  // namespace seqd
