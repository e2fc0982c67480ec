// Dense keys: IDs handed out with no hole (docs/dense-keys.md).
//
// Every block of a dense key is durable before it is answered: each request
// waits for a store transaction that advances the key's leaf_alloc row by
// exactly the IDs it hands out. So a key's blocks are contiguous (1, 2, 3,
// ... with no ID skipped), through restarts and kill -9 alike; the row's
// max_id - 1 is always the last ID handed out (MAX_IDS answers it from the
// store); and nothing is buffered in memory that a crash could lose.
//
// Group commit: the requests of a key that arrive while its transaction is in
// flight go together in its next one, in arrival order, and the keys waiting
// go together, up to kMaxBatch keys per transaction, at most
// `reservation_flushes` transactions at once (BatchQueue). At most one
// transaction per key is in flight, so a key's blocks are answered in the
// order its requests arrived: a request that starts after another was
// answered gets higher IDs.
//
// Idempotent retry: a request may carry a token (up to kMaxBlockTokenLength
// printable ASCII bytes, chosen by the client, unique per key). The store
// records the block under it in the same transaction; the same request
// again (same key, token and count) gets the same block, so an answer lost
// on the way costs no hole. Tokens are kept for `token_retention`
// (PruneTokens forgets older ones).
//
// Thread safety: every public method is safe from any thread and never
// blocks on I/O. `done` runs exactly once, on the calling thread (a refused
// request) or a database runner thread. It must not block.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "server/base/batch_queue.h"
#include "server/base/clock.h"
#include "server/base/task_runner.h"
#include "server/core/issued_counters.h"
#include "server/core/key_rules.h"
#include "server/core/shard_gate.h"
#include "server/core/token_buckets.h"
#include "server/service/id_api.h"
#include "storage/segment_store.h"

namespace seqd {

struct DenseOptions {
  // Largest block per request.
  int64_t max_count = 100'000;
  // Store transactions at once (each with up to kMaxBatch keys).
  size_t reservation_flushes = 2;
  // Requests waiting for a transaction at most; beyond it a request is
  // refused at once with kStoreUnavailable.
  size_t max_waiting = 100'000;
  // New rows for auto-created dense keys per second per requester, with
  // bursts of auto_create_burst; 0: no limit (rows are then created in the
  // request's own transaction).
  double auto_create_rate = 0;
  double auto_create_burst = 1;
  // Cluster mode (server/core/shard_gate.h): answer only for keys whose
  // shard this instance holds, and fence every transaction with the shard's
  // epoch. Optional; must outlive the allocator.
  ShardGate* gate = nullptr;
  // Where the IDs handed out are counted (seqd_ids_issued_total, per
  // auto-create rule). Optional; must outlive the allocator.
  Metrics* metrics = nullptr;
};

class DenseAllocator {
 public:
  // Keys per store transaction at most.
  static constexpr size_t kMaxBatch = 1000;

  // `store`, `db` and `clock` must outlive the allocator. Store calls run
  // only on `db`.
  DenseAllocator(SegmentStore& store, TaskRunner& db, Clock& clock, KeyRules rules,
                 DenseOptions options);
  ~DenseAllocator();
  DenseAllocator(const DenseAllocator&) = delete;
  DenseAllocator& operator=(const DenseAllocator&) = delete;

  // True if `key` is dense: an auto-create rule marked dense matches it.
  bool IsDense(std::string_view key) const;

  // Hands `done` one contiguous block of `count` IDs of `key`, durable and
  // right after the key's previous block. `token` (may be empty) makes the
  // request idempotent (see above). `requester` names who asks (a token
  // id), for auto_create_rate.
  // REQUIRES: a checked take: ValidateClientKey(key) and ValidateToken(token)
  // ok, 1 <= count <= options().max_count (KeyRouter::Take, the IdApi
  // boundary, checks them). Errors: kInvalidArgument (a token used before
  // with another count), kUnknownKey (no row, and no dense rule creates it),
  // kResourceExhausted (over auto_create_rate), kStoreUnavailable (the
  // store failed, or too many requests wait), kShuttingDown; with a gate,
  // kWrongOwner (the key's shard is not held here, or the transaction was
  // fenced out: nothing was handed out).
  void Take(std::string_view key, int64_t count, std::string_view token, TakeCallback done,
            std::string_view requester = {});

  // Checks a token as Take does: empty, or 1 to kMaxBlockTokenLength
  // printable ASCII bytes (no space).
  static Status ValidateToken(std::string_view token);

  // On the db runner: forgets tokens recorded more than `retention` ago
  // (SegmentStore::PruneBlockTokens, by the store's clock). `done`
  // (optional) gets how many.
  void PruneTokens(std::chrono::milliseconds retention,
                   std::function<void(Result<int64_t>)> done = {});

  // Fails every waiting request with kShuttingDown and refuses new ones.
  void Shutdown();

  DenseStats stats() const;
  const DenseOptions& options() const { return options_; }

 private:
  struct Waiting {
    int64_t count = 0;
    std::string token;
    TakeCallback done;
    std::string requester;
  };
  // A key with requests waiting or a transaction in flight. `queued`: the
  // key is in queue_ or in a running flush; it leaves keys_ when a flush
  // finds nothing more waiting.
  struct KeyQueue {
    std::vector<Waiting> waiting;
    bool queued = false;
  };
  // One store request of a flush and the waiting requests it answers.
  struct Part {
    std::string key;
    std::vector<Waiting> waiters;
    int64_t total = 0;
    std::string token;  // the one waiter's token, if it has one
  };

  // On the db runner: one batch of keys.
  void Flush(std::vector<std::string> keys);
  // The key's waiting requests as store requests, in arrival order: each
  // run of requests without a token summed into one, each with a token
  // alone.
  std::vector<Part> TakeWaiting(const std::string& key) EXCLUDES(mu_);
  // Runs `parts` as one batch of store requests; answers each waiter.
  void Reserve(std::vector<Part>& parts, bool create);
  // Answers `part`'s waiters from `range` (or its error).
  void Answer(Part& part, Result<ReservedSegment> range);
  // Takes the key out of keys_, or queues it again if requests came meanwhile.
  void Requeue(const std::string& key) EXCLUDES(mu_);
  // Answers every request waiting on `key` with `error` and forgets the key.
  void FailWaiting(const std::string& key, const Error& error) EXCLUDES(mu_);

  SegmentStore& store_;
  TaskRunner& db_;
  Clock& clock_;
  const KeyRules rules_;
  const DenseOptions options_;
  const IssuedCounters issued_;  // after rules_, which it refers to
  std::unique_ptr<TokenBuckets> auto_create_limit_;  // null: no limit

  mutable Mutex mu_;
  std::unordered_map<std::string, KeyQueue> keys_ GUARDED_BY(mu_);
  std::atomic<bool> shutting_down_{false};
  std::atomic<int64_t> waiting_now_{0};
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> transactions_{0};
  std::atomic<int64_t> replayed_{0};
  std::atomic<int64_t> failures_{0};
  // Last: destroyed first (its flushes reference the members above).
  std::unique_ptr<BatchQueue<std::string>> queue_;
};

}  // namespace seqd
