#include "storage/memory/memory_worker_lease_store.h"

#include <utility>

#include "storage/unix_millis.h"
#include "storage/worker_lease_store_factory.h"

namespace seqd {

MemoryWorkerLeaseStore::MemoryWorkerLeaseStore(std::function<int64_t()> now_ms)
    : now_ms_(now_ms ? std::move(now_ms) : std::function<int64_t()>(UnixMillisNow)) {}

Status MemoryWorkerLeaseStore::EnsureSchema() { return OkStatus(); }

Result<WorkerLease> MemoryWorkerLeaseStore::Claim(const ClaimRequest& r) {
  Status st = worker_lease::CheckClaim(r);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  const int64_t now = now_ms_();
  std::vector<WorkerLease> rows;
  for (auto it = rows_.begin(); it != rows_.end() && it->first < r.max_workers; ++it) {
    rows.push_back(it->second);
  }
  const worker_lease::ClaimChoice choice = worker_lease::ChooseWorkerId(rows, r, now);
  if (choice.kind == worker_lease::ClaimChoice::kNone) {
    return worker_lease::AllLeased(r.max_workers);
  }

  const WorkerLease out = worker_lease::ClaimedLease(r, choice, rows, now);
  WorkerLease& row = rows_[choice.worker_id];  // inserted (time bound 0) for kInsert
  row.worker_id = out.worker_id;
  row.owner = out.owner;
  row.instance = out.instance;
  row.expires_ms = out.expires_ms;
  return out;
}

Result<WorkerLease> MemoryWorkerLeaseStore::Renew(int worker_id, std::string_view instance,
                                                  int64_t ttl_ms, int64_t time_bound_ms) {
  Status st = worker_lease::CheckRenew(worker_id, instance, ttl_ms);
  if (!st.ok()) return st.error();
  MutexLock lock(mu_);
  const int64_t now = now_ms_();
  auto it = rows_.find(worker_id);
  if (it == rows_.end() || it->second.instance != instance) {
    return worker_lease::NotLeased(worker_id);
  }
  WorkerLease& row = it->second;
  row.expires_ms = now + ttl_ms;
  if (time_bound_ms > row.time_bound_ms) row.time_bound_ms = time_bound_ms;
  WorkerLease out = row;
  out.store_now_ms = now;
  return out;
}

Status MemoryWorkerLeaseStore::Release(int worker_id, std::string_view instance,
                                       int64_t time_bound_ms) {
  Status st = worker_lease::CheckHolder("release", worker_id, instance);
  if (!st.ok()) return st;
  MutexLock lock(mu_);
  auto it = rows_.find(worker_id);
  if (it == rows_.end() || it->second.instance != instance) return OkStatus();
  it->second.expires_ms = 0;
  it->second.time_bound_ms = time_bound_ms;
  return OkStatus();
}

Result<std::vector<WorkerLease>> MemoryWorkerLeaseStore::List() {
  MutexLock lock(mu_);
  const int64_t now = now_ms_();
  std::vector<WorkerLease> out;
  out.reserve(rows_.size());
  for (const auto& [id, row] : rows_) {
    out.push_back(row);
    out.back().store_now_ms = now;
  }
  return out;
}

}  // namespace seqd
