// Builds the WorkerLeaseStore named by a store spec (the --store syntax), and
// the pieces every WorkerLeaseStore shares (argument checks, error texts, the
// choice of a worker id), so that all backends answer alike.
//
// Thread safety: plain functions, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "storage/worker_lease_store.h"

namespace seqd {

// `spec` is one of
//   memory:                            MemoryWorkerLeaseStore (tests)
//   sqlite:PATH                        SqliteWorkerLeaseStore on PATH (parent dir created)
//   mysql://user:pass@host:port/db     MysqlWorkerLeaseStore (port defaults to 3306;
//                                      several hosts: host1:port,host2:port)
// Anything else is kInvalidArgument.
//
// sqlite: opens the file and runs EnsureSchema(); any failure is returned.
// mysql: only parses the URL; it does NOT connect (the caller runs
// EnsureSchema() once the database answers), like OpenStore.
Result<std::unique_ptr<WorkerLeaseStore>> OpenWorkerLeaseStore(std::string_view spec);

// ---- For the implementations ----------------------------------------------
namespace worker_lease {

constexpr size_t kMaxOwnerBytes = 255;
constexpr size_t kMaxInstanceBytes = 64;
constexpr int kMaxWorkers = 1 << 20;
// Longest accepted lease, one year: store-now + ttl_ms never overflows.
constexpr int64_t kMaxTtlMs = int64_t{365} * 24 * 3600 * 1000;

// kInvalidArgument naming the first bad field of `r`, else ok.
Status CheckClaim(const ClaimRequest& r);
// kInvalidArgument unless worker_id >= 0 and `instance` is 1..64 bytes.
// `op` ("renew", "release") starts the message.
Status CheckHolder(const char* op, int worker_id, std::string_view instance);
// kInvalidArgument unless 0 < ttl_ms <= kMaxTtlMs.
Status CheckTtl(const char* op, int64_t ttl_ms);
// CheckHolder, then CheckTtl, for "renew".
Status CheckRenew(int worker_id, std::string_view instance, int64_t ttl_ms);

// kNotServing "all N worker ids are leased".
Error AllLeased(int max_workers);
// kFailedPrecondition "worker id N is no longer leased to this process".
Error NotLeased(int worker_id);

// What Claim does, decided from the rows with worker_id < r.max_workers.
struct ClaimChoice {
  enum Kind {
    kNone,    // every id is leased: AllLeased
    kInsert,  // `worker_id` has no row: insert one
    kUpdate,  // take rows[row] (held by r.instance already, or expired)
  };
  Kind kind = kNone;
  int worker_id = -1;
  size_t row = 0;  // kUpdate: index into `rows`
};

// Applies the preference order of WorkerLeaseStore::Claim. `rows` REQUIRES:
// sorted by worker_id, each below r.max_workers. A row counts as expired
// when expires_ms <= now_ms. Strings compare byte for byte.
ClaimChoice ChooseWorkerId(const std::vector<WorkerLease>& rows, const ClaimRequest& r,
                           int64_t now_ms);

// The lease that `choice` (from ChooseWorkerId over `rows`, REQUIRES: not
// kNone) gives `r` at store time `now_ms`: expiring at now_ms + r.ttl_ms;
// for kUpdate, with the time bound of the row taken over, and `reclaimed`
// if that row was r.instance's.
WorkerLease ClaimedLease(const ClaimRequest& r, const ClaimChoice& choice,
                         const std::vector<WorkerLease>& rows, int64_t now_ms);

}  // namespace worker_lease
}  // namespace seqd
