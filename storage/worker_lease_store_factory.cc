#include "storage/worker_lease_store_factory.h"

#include <string>

#include "storage/memory/memory_worker_lease_store.h"
#include "storage/mysql/mysql_worker_lease_store.h"
#include "storage/sqlite/sqlite_worker_lease_store.h"
#include "storage/store_spec.h"

namespace seqd {

Result<std::unique_ptr<WorkerLeaseStore>> OpenWorkerLeaseStore(std::string_view spec) {
  return OpenFromSpec<WorkerLeaseStore, MemoryWorkerLeaseStore, SqliteWorkerLeaseStore,
                      MysqlWorkerLeaseStore>(spec);
}

namespace worker_lease {
namespace {

Error Invalid(const char* op, const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument, std::string(op) + ": " + what);
}

Status CheckInstance(const char* op, std::string_view instance) {
  if (instance.empty() || instance.size() > kMaxInstanceBytes) {
    return Invalid(op, "instance must be 1.." + std::to_string(kMaxInstanceBytes) + " bytes, got " +
                           std::to_string(instance.size()));
  }
  return OkStatus();
}

}  // namespace

Status CheckTtl(const char* op, int64_t ttl_ms) {
  if (ttl_ms <= 0 || ttl_ms > kMaxTtlMs) {
    return Invalid(op, "ttl_ms must be in 1.." + std::to_string(kMaxTtlMs) + ", got " +
                           std::to_string(ttl_ms));
  }
  return OkStatus();
}

Status CheckClaim(const ClaimRequest& r) {
  constexpr const char* kOp = "claim";
  if (r.owner.size() > kMaxOwnerBytes) {
    return Invalid(kOp, "owner must be at most " + std::to_string(kMaxOwnerBytes) + " bytes, got " +
                            std::to_string(r.owner.size()));
  }
  Status st = CheckInstance(kOp, r.instance);
  if (!st.ok()) return st;
  if (r.max_workers < 1 || r.max_workers > kMaxWorkers) {
    return Invalid(kOp, "max_workers must be in 1.." + std::to_string(kMaxWorkers) + ", got " +
                            std::to_string(r.max_workers));
  }
  return CheckTtl(kOp, r.ttl_ms);
}

Status CheckHolder(const char* op, int worker_id, std::string_view instance) {
  if (worker_id < 0) {
    return Invalid(op, "worker_id must be >= 0, got " + std::to_string(worker_id));
  }
  return CheckInstance(op, instance);
}

Status CheckRenew(int worker_id, std::string_view instance, int64_t ttl_ms) {
  Status st = CheckHolder("renew", worker_id, instance);
  if (st.ok()) st = CheckTtl("renew", ttl_ms);
  return st;
}

Error AllLeased(int max_workers) {
  return MakeError(ErrorCode::kNotServing,
                   "all " + std::to_string(max_workers) + " worker ids are leased");
}

Error NotLeased(int worker_id) {
  return MakeError(ErrorCode::kFailedPrecondition, "worker id " + std::to_string(worker_id) +
                                                       " is no longer leased to this process");
}

ClaimChoice ChooseWorkerId(const std::vector<WorkerLease>& rows, const ClaimRequest& r,
                           int64_t now_ms) {
  auto update = [&](size_t i) { return ClaimChoice{ClaimChoice::kUpdate, rows[i].worker_id, i}; };
  // 1. A row already held by this instance (the lowest, should there be two).
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].instance == r.instance) return update(i);
  }
  // 2. The lowest expired (or released) row of this owner.
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].expires_ms <= now_ms && rows[i].owner == r.owner) return update(i);
  }
  // 3. The lowest id without a row.
  int64_t free_id = 0;
  for (const WorkerLease& row : rows) {
    if (row.worker_id > free_id) break;
    free_id = static_cast<int64_t>(row.worker_id) + 1;
  }
  if (free_id < r.max_workers) {
    return ClaimChoice{ClaimChoice::kInsert, static_cast<int>(free_id), 0};
  }
  // 4. The row that expired longest ago (the lowest id on a tie).
  bool found = false;
  size_t best = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].expires_ms > now_ms) continue;
    if (!found || rows[i].expires_ms < rows[best].expires_ms) best = i;
    found = true;
  }
  if (found) return update(best);
  return ClaimChoice{};
}

WorkerLease ClaimedLease(const ClaimRequest& r, const ClaimChoice& choice,
                         const std::vector<WorkerLease>& rows, int64_t now_ms) {
  WorkerLease out;
  out.worker_id = choice.worker_id;
  out.owner = r.owner;
  out.instance = r.instance;
  out.expires_ms = now_ms + r.ttl_ms;
  out.store_now_ms = now_ms;
  if (choice.kind == ClaimChoice::kUpdate) {
    out.time_bound_ms = rows[choice.row].time_bound_ms;
    out.reclaimed = rows[choice.row].instance == r.instance;
  }
  return out;
}

}  // namespace worker_lease
}  // namespace seqd
