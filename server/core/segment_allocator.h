// Double-buffered segment allocation (Leaf's segment mode, without spinning).
//
// Per key the allocator holds the current segment and, once more than
// `prefetch_fraction` of it is used, reserves the next one on the database
// runner (at most one reservation in flight per key). A request that finds
// both segments empty is parked and completed when the reservation lands, or
// failed with kStoreUnavailable at its deadline.
//
// Dynamic step: each reservation after the first measures how long the
// previous segment lasted (time between reservations). Shorter than
// `segment_duration` doubles the step; longer than twice that halves it; the
// step never leaves [table step, max_step]. A reservation is also never
// smaller than the demand of the requests parked on it (capped at max_step).
//
// Hot path: a key whose current segment is below its prefetch point is
// served with one fetch_add (SegmentCursor), the key found through
// the calling thread's handle cache, without a lock; with a KeyHandle,
// without the lookup. Everything else takes the key's lock.
//
// Thread safety: every public method is safe from any thread and never
// blocks on I/O. Callbacks run exactly once, on the calling thread (fast
// path), a database runner thread (after a reservation) or a clock timer
// thread (deadline). They must not block; post to your own executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "server/base/batch_queue.h"
#include "server/base/clock.h"
#include "server/base/task_runner.h"
#include "server/core/issued_counters.h"
#include "server/core/key_handle.h"
#include "server/core/key_rules.h"
#include "server/core/key_shard.h"
#include "server/core/key_state.h"
#include "server/core/parked_deadlines.h"
#include "server/core/shard_gate.h"
#include "server/core/thread_handle_cache.h"
#include "server/core/token_buckets.h"
#include "server/service/id_api.h"
#include "storage/segment_store.h"

namespace seqd {

class Metrics;

struct AllocatorOptions {
  double prefetch_fraction = 0.1;                           // reserve next after this much is used
  Clock::Duration wait_deadline = std::chrono::seconds(1);  // parked request limit
  Clock::Duration segment_duration = std::chrono::minutes(15);
  // The step grows (within max_step) until both buffers together hold this
  // long at the key's current rate: a database outage this long costs no
  // request, at the price of more IDs skipped at a restart. 0: off.
  Clock::Duration min_runway = Clock::Duration::zero();
  int64_t max_step = 1'000'000;  // at most 2^31 - 2: more is taken as that
  int64_t max_count = 10'000;    // largest batch per call
  Clock::Duration idle_timeout = std::chrono::minutes(10);         // evict keys unused this long
  Clock::Duration retry_backoff = std::chrono::milliseconds(200);  // after a failed reservation
  // Keys held in memory at most (0: no cap); about 250 bytes each (keys of
  // up to 15 bytes). Beyond it the least recently used idle keys leave:
  // exactly among a few hundred keys, else the oldest of a random sample;
  // never one with parked requests or a reservation in flight. Their unused
  // IDs are skipped, as after idle_timeout.
  size_t max_cached_keys = 1'000'000;
  // Keys remembered as recently unknown (answered 404 without the store);
  // beyond it the oldest are forgotten first.
  size_t max_unknown_keys = 65'536;
  // Reservations run in batches (one store transaction each, up to
  // kMaxReservationBatch keys): at most this many batches at once.
  size_t reservation_flushes = 2;
  // New rows for auto-created keys per second per requester (the token id
  // given to Take), with bursts of auto_create_burst; 0: no limit. A key
  // whose row exists is never counted, even when first loaded into memory.
  double auto_create_rate = 0;
  double auto_create_burst = 1;
  Metrics* metrics = nullptr;  // optional; must outlive the allocator
  // Cluster mode (server/core/shard_gate.h): answer only for keys whose
  // shard this instance holds, fence every reservation with the shard's
  // epoch, and never serve IDs buffered under an earlier epoch. Optional;
  // must outlive the allocator.
  ShardGate* gate = nullptr;
};

struct AllocatorStats {
  int64_t reservations = 0;
  int64_t reservation_failures = 0;
  int64_t parked_now = 0;
  int64_t parked_total = 0;  // requests that ever waited for a reservation
  int64_t timeouts = 0;
  int64_t keys_in_memory = 0;
  int64_t evicted_idle = 0;         // keys dropped after idle_timeout
  int64_t evicted_capacity = 0;     // keys dropped beyond max_cached_keys
  int64_t unknown_keys = 0;         // keys remembered as recently unknown
  int64_t auto_create_refused = 0;  // auto-creations refused by auto_create_rate
};

class SegmentAllocator {
 public:
  // Keys per reservation batch (one store transaction) at most.
  static constexpr size_t kMaxReservationBatch = 1000;

  // `store`, `db` and `clock` must outlive the allocator. Store calls run
  // only on `db`.
  SegmentAllocator(SegmentStore& store, TaskRunner& db, Clock& clock, KeyRules rules,
                   AllocatorOptions options);
  ~SegmentAllocator();
  SegmentAllocator(const SegmentAllocator&) = delete;
  SegmentAllocator& operator=(const SegmentAllocator&) = delete;

  // Hands out `count` IDs of `key` to `done`.
  // REQUIRES: a checked take: ValidateClientKey(key) ok and 1 <= count <=
  // options().max_count (KeyRouter::Take, the IdApi boundary, checks both
  // before any allocator sees the request). A count that breaks this is a
  // bug of the caller's: answered kInternal, never served. Errors:
  // kUnknownKey, kStoreUnavailable (deadline passed, or
  // the database queue was full: answered at once),
  // kShuttingDown, kResourceExhausted (the key would be auto-created and
  // `requester` is over auto_create_rate); with a gate, kWrongOwner (the
  // key's shard is not held by this instance now, or was lost while the
  // request waited). `requester` names who asks (a token id; "" for a
  // listener that does not say): it is read only when the call brings a
  // new key into memory, never on the path of keys already held.
  // `contiguous`: the `count` IDs are one range from one segment
  // (NEXT_BLOCK): what is left of a segment too short for the block is
  // skipped, never handed out, and a block larger than the step gets a
  // segment of its own.
  void Take(std::string_view key, int64_t count, TakeCallback done, std::string_view requester = {},
            bool contiguous = false);

  // Keys per MaxIds, GetMinSeqs and SetMinSeqs call at most: kMaxKeysPerCall
  // (more: kTooLarge). Values come back through a ValuesCallback
  // (server/service/id_api.h).

  // MAX_IDS (docs/protocol.md), allocator_queries.cc: per key, the largest
  // ID this instance handed out if it holds the key in memory, else the
  // table's max (SegmentStore::GetMaxIds): every ID at or below the answer
  // was handed out or never will be, every later one is above it; 0 for a
  // key without a row (none is created). Errors: kInvalidArgument (a bad
  // or reserved key), kTooLarge, kStoreUnavailable; with a gate,
  // kWrongOwner if any key's shard is not held here now. `done` runs once,
  // on the calling thread, a database thread or a timer thread.
  void MaxIds(std::vector<std::string> keys, ValuesCallback done);

  // GET_MIN_SEQS: the durable min seq of each key (0 if never set), read
  // from the store (any instance may answer). Errors as MaxIds, no gate.
  void GetMinSeqs(std::vector<std::string> keys, ValuesCallback done);

  // The allocation time of each key in unix ms, -1 for a key that has no
  // row (SegmentStore::GetAllocTimes: a dense key's last block, to the
  // millisecond; else when its row last changed), read from the store (any
  // instance may answer). Errors as GetMinSeqs.
  void GetAllocTimes(std::vector<std::string> keys, ValuesCallback done);

  // USER_SEQS: `field` of `user` in each conversation (0 if never set),
  // read from the store (any instance may answer: nothing of it is held in
  // memory). Errors: kInvalidArgument (a bad user id or conversation),
  // kTooLarge, kStoreUnavailable.
  void GetUserSeqs(std::string user, UserSeqField field, std::vector<std::string> convs,
                   ValuesCallback done);
  // SET_USER_SEQS: sets `field` of `user` in each conversation, to the
  // value or (raise_only) to the larger of it and the stored one, in one
  // transaction, durable before `done` (any instance may write: the store
  // decides a raise). Errors: kInvalidArgument (a bad user id or
  // conversation, a conversation twice, a value < 0), kTooLarge,
  // kStoreUnavailable.
  void SetUserSeqs(std::string user, UserSeqField field, bool raise_only,
                   std::vector<UserSeqValue> values, std::function<void(Status)> done);
  // A user id of the user seqs: 1 to kMaxUserIdLength bytes, no control
  // characters.
  static Status CheckUserId(std::string_view user);

  // SET_MIN_SEQS: stores every value in one transaction, durable before
  // `done`. Errors: kInvalidArgument (a bad key, a key twice, a value < 0),
  // kTooLarge, kStoreUnavailable; with a gate, kWrongOwner if a key's shard
  // is not held here now or the write was fenced out (nothing written).
  void SetMinSeqs(std::vector<MinSeqValue> values, std::function<void(Status)> done);

  // The checks of the calls above, for callers that answer bad requests
  // before routing them (KeyRouter).
  static Status CheckKeyList(const std::vector<std::string>& keys);
  static Status CheckMinSeqList(const std::vector<MinSeqValue>& values);

  // Resolves `key` for TryTake and Take(KeyHandle&). The key need not be in
  // memory, exist, or be valid: the first Take(KeyHandle&) says.
  KeyHandle Handle(std::string_view key) const;

  // From memory only, with one atomic operation: the first of `count` IDs
  // (first .. first + count - 1), or nullopt when the call needs more than
  // that (the segment is at its prefetch point or used up, the key left
  // memory, the count is out of range, cluster ownership moved, shutdown):
  // then call Take(KeyHandle&, ...). Never blocks; touches no counters
  // (the per-key IDs-issued metric catches up at the next scrape).
  // The hot path: the TryTakes, ThreadHandleCache::Slot and
  // SegmentCursor::TryTake are always inlined, whatever GCC's inliner makes
  // of the size of the file that calls them.
  [[gnu::always_inline]] std::optional<int64_t> TryTake(const KeyHandle& handle,
                                                        int64_t count) const {
    if (!handle.fast_ || count < 1 || count > options_.max_count ||
        shutting_down_.load(std::memory_order_relaxed)) {
      return std::nullopt;
    }
    KeyFastPath& fast = *handle.fast_;
    if (options_.gate &&
        // Acquire: a buffer dropped for a new epoch is closed before the
        // epoch is published, so a take that sees the epoch sees it closed.
        options_.gate->Check(handle.key_).epoch != fast.epoch.load(std::memory_order_acquire)) {
      return std::nullopt;
    }
    return fast.cursor.TryTake(*handle.word_, count);
  }

  // By name, as TryTake(handle): one lookup in the calling thread's cache
  // of handles (server/core/thread_handle_cache.h), no lock while the key
  // stays in memory.
  [[gnu::always_inline]] std::optional<int64_t> TryTake(std::string_view key, int64_t count) const {
    bool fresh = false;
    KeyHandle& handle = ThreadHandleCache::Slot(id_, key, &fresh);
    if (fresh || !handle.fast_ || handle.fast_->erased.load(std::memory_order_relaxed)) {
      Resolve(handle);
    }
    return TryTake(handle, count);
  }

  // As Take(key, ...), trying TryTake first; re-resolves `handle` when the
  // key left memory (or was not in it).
  void Take(KeyHandle& handle, int64_t count, TakeCallback done, std::string_view requester = {});

  // Forgets that `key` was recently unknown (it was just created).
  void OnKeyCreated(std::string_view key);

  // Applies a step changed by an admin call to the in-memory state.
  void OnTableStepChanged(std::string_view key, int64_t table_step);

  // Drops keys unused for idle_timeout (never one with work in flight).
  // Returns how many were dropped. Use times are only as fine as the calls
  // to this sweep and the reservations (the hot path does not read the
  // clock), so call it every idle_timeout / 4 or so.
  size_t EvictIdle();

  // Drops registered keys (those no rule matches) whose rows are gone. Runs
  // the store scan on the db runner; `done` (optional) gets the count dropped.
  void RefreshRegisteredKeys(std::function<void(Result<size_t>)> done = {});

  // Fails every parked request with kShuttingDown and refuses new ones.
  void Shutdown();

  // Every key in memory, sorted by key.
  std::vector<KeySnapshot> Snapshot() const;
  // At most `limit` keys greater than `after`, sorted by key (a page).
  std::vector<KeySnapshot> Snapshot(std::string_view after, size_t limit) const;
  std::optional<KeySnapshot> SnapshotKey(std::string_view key) const;
  AllocatorStats stats() const;
  const KeyRules& rules() const { return rules_; }
  const AllocatorOptions& options() const { return options_; }

 private:
  // The key's state and the shards of keys: server/core/key_state.h and
  // key_shard.h, where the locks that guard them are named.
  using KeyState = allocator_internal::KeyState;
  using WaitState = allocator_internal::WaitState;
  using Buffer = allocator_internal::Buffer;
  using Waiter = allocator_internal::Waiter;
  using Shard = allocator_internal::Shard;
  using KeyRef = allocator_internal::KeyRef;
  // A reservation waiting for its batch. `step` 0: the row's own step.
  struct PendingReservation {
    KeyRef state;
    int64_t step = 0;
    ShardGrant grant;          // the shard and epoch to fence with (ignored without a gate)
    Clock::TimePoint sent_at;  // when it was queued: its latency is measured from here
    std::string creator;       // auto-created keys before their first reservation
  };
  // Parked requests taken off their key with their answers, to be given
  // once the key's lock is released (Deliver).
  using Answers = std::vector<std::pair<std::shared_ptr<Waiter>, Result<IdBatch>>>;

  // Take and park (segment_allocator.cc).
  // Points `handle` at its key's state in memory (null if not in memory).
  void Resolve(KeyHandle& handle) const;
  // Take past the fast path, with the key's lock: serve, reserve or park.
  void TakeSlow(std::string_view key, int64_t count, TakeCallback done, std::string_view requester,
                const ShardGrant& grant, bool contiguous = false);
  // Take past the fast path.
  void TakeChecked(std::string_view key, int64_t count, TakeCallback done,
                   std::string_view requester, bool contiguous);
  // A key just brought into memory by `requester`: its rule, creator,
  // IDs-issued counter and rate origin.
  void AdmitNewKeyLocked(KeyState& state, std::string_view requester) REQUIRES(state.mu);
  // Cluster mode: the key is held at `grant`'s epoch now; IDs buffered
  // under another one are dropped.
  void MoveToEpochLocked(KeyState& state, const ShardGrant& grant) REQUIRES(state.mu);
  // ServeLocked for a new request; the first one after a landing that
  // answered parked requests starts the rate window and reopens TryTake.
  bool ServeTakeLocked(KeyState& state, int64_t& need, IdBatch& got, bool contiguous)
      REQUIRES(state.mu);
  // Parks a request still missing `need` IDs (`got` so far) and starts a
  // reservation if due. The caller sets the deadline (deadlines_, OnDeadline).
  std::shared_ptr<Waiter> ParkLocked(KeyState& state, int64_t need, IdBatch got, TakeCallback done,
                                     bool contiguous) REQUIRES(state.mu);
  // Moves up to `need` IDs from the buffers into `got`, decrementing
  // `need`; true once need == 0.
  bool ServeLocked(KeyState& state, int64_t& need, IdBatch& got) REQUIRES(state.mu);
  // As ServeLocked for a contiguous block: all `need` IDs from one segment
  // or none; a current segment too short is ended (its rest skipped) when
  // the next one is here.
  bool ServeBlockLocked(KeyState& state, int64_t& need, IdBatch& got) REQUIRES(state.mu);
  // Makes `b` the current segment (ending the old); `fast`: open to TryTake
  // at once, else once the caller sets the limit (SetLimit).
  void InstallCurrentLocked(KeyState& state, const Buffer& b, bool fast) const REQUIRES(state.mu);
  // REQUIRES: has_current. How much of the current segment TryTake may
  // claim: all of it once the next one is here, else up to the prefetch point.
  int64_t FastLimitLocked(const KeyState& state, const Buffer& current) const REQUIRES(state.mu);
  void OnDeadline(const KeyRef& state, uint64_t waiter_id);

  // Reservations and their batches (allocator_reservations.cc).
  // Starts a reservation if one is due and allowed.
  void MaybeReserveLocked(KeyState& state) REQUIRES(state.mu);
  // REQUIRES: state.wait->retry_at set. Runs MaybeReserveLocked at
  // retry_at if requests are parked.
  void ScheduleRetryLocked(KeyState& state) REQUIRES(state.mu);
  // On the db runner: one batch's reservations (SegmentStore::ReserveEach:
  // each key installed as its result lands), creating the rows of
  // auto-created keys first seen missing (within auto_create_rate).
  void RunReservations(std::vector<PendingReservation> batch);
  ReserveRequest RequestFor(const PendingReservation& p) const;
  // The batch entries whose rows are missing and may be auto-created now;
  // those over auto_create_rate get kResourceExhausted in `results`.
  std::vector<size_t> RowsToCreate(const std::vector<PendingReservation>& batch,
                                   std::vector<Result<ReservedSegment>>& results);
  // Creates the rows of batch[i] for each i in `to_create` (one
  // transaction), then reserves for them again into `results`.
  void CreateRowsAndReserve(const std::vector<PendingReservation>& batch,
                            std::vector<ReserveRequest>& requests,
                            const std::vector<size_t>& to_create,
                            std::vector<Result<ReservedSegment>>& results);
  // `shed`: the reservation was refused by the full database queue; parked
  // requests fail at once instead of at their deadline.
  void OnReserved(const PendingReservation& p, Result<ReservedSegment> result, double seconds,
                  bool shed);
  // The steps of OnReserved, in order.
  void RecordReservationMetricsLocked(KeyState& state, const Result<ReservedSegment>& result,
                                      double seconds) REQUIRES(state.mu);
  // Reserved under `grant`, whose epoch is no longer the key's, or `fenced` out: the IDs
  // are skipped; fenced at the key's epoch, the shard is someone else's.
  void DropStaleReservationLocked(KeyState& state, const ShardGrant& grant, bool fenced,
                                  Answers& answers) REQUIRES(state.mu);
  // The new segment becomes the current or the next one; the step and the
  // reservation latency learn from it.
  void InstallReservationLocked(KeyState& state, const ReservedSegment& seg,
                                Clock::TimePoint sent_at, double seconds) REQUIRES(state.mu);
  // Serves parked requests, oldest first, while the buffers last.
  void ServeParkedLocked(KeyState& state, Answers& answers) REQUIRES(state.mu);
  // Records the failure; true if the key must leave memory (unknown, or
  // refused by auto_create_rate: its parked requests fail with it).
  bool FailReservationLocked(KeyState& state, const Error& error, double seconds, bool shed,
                             Answers& answers) REQUIRES(state.mu);
  // Runs the callbacks of `answers`. Never with a key's lock held.
  void Deliver(Answers& answers);

  // Step sizing (allocator_step.cc).
  int64_t NextStepLocked(KeyState& state, int64_t demand) REQUIRES(state.mu);
  // The step the measured rate and reservation latency call for (0 before
  // the first reservation); see NextStepLocked.
  int64_t MeasuredStepLocked(const KeyState& state, Clock::TimePoint now) const REQUIRES(state.mu);

  // The key table and eviction (allocator_keys.cc).
  Shard& ShardFor(std::string_view key) const;
  KeyRef Find(std::string_view key) const;
  // nullptr if the key is known not to exist (recently reported unknown).
  // Stamps the key used. A key it inserts is admitted (AdmitNewKeyLocked,
  // for `requester`) before it is in the table.
  KeyRef FindOrInsert(std::string_view key, std::string_view requester, bool* inserted);
  void StampUse(KeyState& state) const;
  // The coarse clock in whole seconds since started_ (key use stamps), and
  // a key's stamp back as a time.
  uint32_t CoarseSeconds() const;
  Clock::TimePoint LastUsedLocked(const KeyState& state) const REQUIRES(state.mu);
  void RememberUnknown(std::string_view key);
  void Erase(const KeyRef& state);
  // REQUIRES: `state` is in shard.keys.
  void EraseLocked(Shard& shard, KeyState& state) REQUIRES(shard.mu);
  // Marks it erased and ends its current segment.
  void MarkErasedLocked(KeyState& state) const REQUIRES(state.mu);
  // Drops least recently used idle keys while more than max_cached_keys
  // are held: exactly the least recently used for a few keys, else the
  // least recently used of a random sample.
  void EvictOverCapacity();
  KeyRef PickEvictionVictim();

  // MAX_IDS (allocator_queries.cc). The key's max from memory, if this
  // instance holds it at `grant`'s epoch with a segment installed; else
  // nullopt, and `*loading` says whether a reservation is in flight.
  std::optional<int64_t> MemoryMax(std::string_view key, const ShardGrant& grant,
                                   bool* loading) const;
  // Answers keys[i] for each i in `todo` from memory or the store (again
  // after a short wait while a first reservation is in flight), until
  // `deadline`.
  void ResolveMaxIds(std::shared_ptr<std::vector<std::string>> keys,
                     std::shared_ptr<std::vector<int64_t>> out, std::vector<size_t> todo,
                     std::vector<ShardGrant> grants, Clock::TimePoint deadline,
                     ValuesCallback done);
  // A store read of one value per key (GetMinSeqs, GetAllocTimes).
  using KeyValuesRead =
      Result<std::vector<int64_t>> (SegmentStore::*)(const std::vector<std::string>&);
  // The checks of every key-list read (shutting down, CheckKeyList), then
  // `read` of `keys` on the store's runner.
  void ReadKeyValues(std::vector<std::string> keys, KeyValuesRead read, ValuesCallback done);

  // Snapshots and metrics (allocator_snapshots.cc).
  // Adds the IDs taken since the last report to the key's IDs-issued counter.
  void ReportIssuedLocked(const KeyState& state) const REQUIRES(state.mu);
  KeySnapshot SnapshotLocked(const KeyState& state) const REQUIRES(state.mu);
  // Records (now, IDs issued) for the rate.
  void SampleRateLocked(const KeyState& state, Clock::TimePoint now) const REQUIRES(state.mu);
  // `t` in milliseconds since started_, modulo 2^32 (KeyState::rate_at_ms).
  uint32_t RateStamp(Clock::TimePoint t) const;

  SegmentStore& store_;
  TaskRunner& db_;
  Clock& clock_;
  const KeyRules rules_;
  const AllocatorOptions options_;
  IssuedCounters issued_counters_;
  std::unique_ptr<Shard[]> shards_;
  std::unique_ptr<BatchQueue<PendingReservation>> reservation_queue_;
  std::atomic<bool> shutting_down_{false};
  // The clock as of the latest EvictIdle() or reservation: stamps key use
  // without a clock read on the hot path.
  std::atomic<Clock::TimePoint> coarse_now_;
  const Clock::TimePoint started_;  // origin of the keys' use stamps

  const uint64_t id_;                         // unique in the process: tags thread-cached handles
  std::atomic<uint64_t> eviction_random_{0};  // PickEvictionVictim's sampling
  std::atomic<int64_t> reservations_{0};
  std::atomic<int64_t> reservation_failures_{0};
  std::atomic<int64_t> parked_now_{0};
  std::atomic<int64_t> timeouts_{0};
  std::atomic<int64_t> parked_total_{0};
  std::atomic<uint64_t> next_waiter_id_{1};
  std::atomic<int64_t> keys_held_{0};
  std::atomic<int64_t> evicted_idle_{0};
  std::atomic<int64_t> evicted_capacity_{0};
  std::atomic<int64_t> auto_create_refused_{0};
  std::unique_ptr<TokenBuckets> auto_create_limit_;  // null: no limit
  // Last: destroyed first, so the key references it holds go back while
  // the shards are still here.
  allocator_internal::ParkedDeadlines deadlines_{
      clock_, [this](const KeyRef& state, uint64_t waiter_id) { OnDeadline(state, waiter_id); }};
};

}  // namespace seqd
