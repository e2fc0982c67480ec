// Process-wide counters of what the SQL stores' transactions met: failed
// COMMITs by reason, COMMITs whose outcome is unknown, conflicts met and retried,
// reserved ranges discarded. Metrics reads them at scrape time
// (seqd_store_* in docs/metrics.md).
//
// Thread safety: every member is an atomic; safe from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace seqd {

// Why a COMMIT (or the transaction before it) failed.
enum class CommitFailure {
  kConflict,  // deadlock or Galera certification conflict (1213), lock wait timeout: rolled back
  kLost,      // the connection died after COMMIT was sent: outcome unknown
  kTimeout,   // no answer within the read timeout: outcome unknown
  kOther,     // the server answered with another error: not committed
};
inline constexpr size_t kCommitFailureKinds = 4;

// "conflict", "lost", "timeout", "other": the `reason` label.
std::string_view CommitFailureName(CommitFailure f);

// True when the transaction may or may not have committed.
inline bool OutcomeUnknown(CommitFailure f) {
  return f == CommitFailure::kLost || f == CommitFailure::kTimeout;
}

struct StoreStats {
  std::array<std::atomic<int64_t>, kCommitFailureKinds> commit_failures{};  // by CommitFailure
  std::atomic<int64_t> commits_unknown{0};   // COMMITs with an unknown outcome
  std::atomic<int64_t> conflicts{0};         // conflicts met, at a statement or at COMMIT
  std::atomic<int64_t> conflict_retries{0};  // transactions re-run after a conflict
  // of the conflicts, transactions a Galera node rolled back while it
  // prepared one of their statements, with no error (MysqlConn::PrepareInto)
  std::atomic<int64_t> silent_rollbacks{0};
  std::atomic<int64_t> ranges_skipped{0};    // reservations never served (outcome unknown)
  // reservation batches rolled back after a short lock wait, then run per key
  std::atomic<int64_t> batch_lock_timeouts{0};

  void CommitFailed(CommitFailure f) {
    commit_failures[static_cast<size_t>(f)].fetch_add(1, std::memory_order_relaxed);
    if (OutcomeUnknown(f)) commits_unknown.fetch_add(1, std::memory_order_relaxed);
  }
};

// The counters of every store in this process.
StoreStats& ProcessStoreStats();

}  // namespace seqd
