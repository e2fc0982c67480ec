// SegmentAllocator: construction, and takes: the fast path's fallbacks,
// serving from the buffers under the key's lock, parking until a
// reservation lands, deadlines and shutdown. Reservations are in
// allocator_reservations.cc, step sizing in allocator_step.cc, the key
// table and eviction in allocator_keys.cc, snapshots in
// allocator_snapshots.cc.
#include "server/core/segment_allocator.h"

#include <algorithm>

#include "common/mutex.h"
#include "server/base/log.h"
#include "server/base/log_format.h"
#include "server/core/key_state_pool.h"
#include "server/metrics/metrics.h"

namespace seqd {

namespace {

// The answer to a take that did not pass KeyRouter::Take's checks: a bug of
// the caller's, refused rather than served (a count below 1 would never be
// filled).
Error UncheckedTake() { return MakeError(ErrorCode::kInternal, "a take that was not checked"); }
std::atomic<uint64_t> next_allocator_id{1};  // 0 marks an unused handle-cache entry

// Keys keep their step in 32 bits (KeyState::step32): max_step stays below.
AllocatorOptions BoundSteps(AllocatorOptions o) {
  o.max_step = std::min<int64_t>(o.max_step, allocator_internal::KeyState::kStepPastInt32 - 1);
  return o;
}
}  // namespace

void intrusive_ptr_add_ref(KeyFastPath* key) { key->refs.fetch_add(1, std::memory_order_relaxed); }

void intrusive_ptr_release(KeyFastPath* key) {
  if (key->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    auto* state = static_cast<allocator_internal::KeyState*>(key);  // every KeyFastPath is one
    state->~KeyState();
    allocator_internal::KeyStatePool::Free(state);
  }
}

SegmentAllocator::SegmentAllocator(SegmentStore& store, TaskRunner& db, Clock& clock,
                                   KeyRules rules, AllocatorOptions options)
    : store_(store),
      db_(db),
      clock_(clock),
      rules_(std::move(rules)),
      options_(BoundSteps(options)),
      issued_counters_(options_.metrics, rules_),
      shards_(new Shard[allocator_internal::kShardCount]),
      reservation_queue_(std::make_unique<BatchQueue<PendingReservation>>(
          db, kMaxReservationBatch, std::max<size_t>(1, options_.reservation_flushes),
          // One reservation per key at most: beyond the keys memory holds,
          // the store is not keeping up (keys with work in flight stay).
          std::max(kMaxReservationBatch, options_.max_cached_keys),
          [this](std::vector<PendingReservation> batch) { RunReservations(std::move(batch)); })),
      coarse_now_(clock.Now()),
      started_(coarse_now_.load()),
      id_(next_allocator_id.fetch_add(1, std::memory_order_relaxed)) {
  if (options_.auto_create_rate > 0) {
    auto_create_limit_ = std::make_unique<TokenBuckets>(options_.auto_create_rate,
                                                        std::max(1.0, options_.auto_create_burst));
  }
}

SegmentAllocator::~SegmentAllocator() = default;

void SegmentAllocator::Resolve(KeyHandle& handle) const {
  KeyRef state = Find(handle.key_);
  handle.word_ = state ? &state->cursor_word : nullptr;
  handle.fast_ = std::move(state);
}

void SegmentAllocator::Take(std::string_view key, int64_t count, TakeCallback done,
                            std::string_view requester, bool contiguous) {
  // A shard not held or a shutdown miss the fast path here, and are
  // answered below (the request itself was checked: see the header).
  if (std::optional<int64_t> first = TryTake(key, count)) {
    IdBatch got;
    got.ranges.push_back(IdRange{*first, *first + count - 1});
    return done(std::move(got));
  }
  TakeChecked(key, count, std::move(done), requester, contiguous);
}

void SegmentAllocator::TakeChecked(std::string_view key, int64_t count, TakeCallback done,
                                   std::string_view requester, bool contiguous) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (count < 1 || count > options_.max_count) return done(UncheckedTake());
  // Checked once the request is here: a request received before the lease
  // deadline may be answered after it (it is concurrent with anything a
  // later owner answers, whose IDs are all larger).
  ShardGrant grant;
  if (options_.gate) {
    grant = options_.gate->Check(key);
    if (!grant.serving()) {
      return done(MakeError(ErrorCode::kWrongOwner, "this instance does not own the key now"));
    }
  }
  TakeSlow(key, count, std::move(done), requester, grant, contiguous);
}

KeyHandle SegmentAllocator::Handle(std::string_view key) const {
  KeyHandle h(key);
  Resolve(h);
  return h;
}

void SegmentAllocator::Take(KeyHandle& handle, int64_t count, TakeCallback done,
                            std::string_view requester) {
  if (std::optional<int64_t> first = TryTake(handle, count)) {
    IdBatch got;
    got.ranges.push_back(IdRange{*first, *first + count - 1});
    return done(std::move(got));
  }
  Take(handle.key_, count, std::move(done), requester);
  // The key may have (re-)entered memory: later takes find it by handle.
  if (!handle.fast_ || handle.fast_->erased.load(std::memory_order_relaxed)) {
    Resolve(handle);
  }
}

void SegmentAllocator::TakeSlow(std::string_view key, int64_t count, TakeCallback done,
                                std::string_view requester, const ShardGrant& grant,
                                bool contiguous) {
  for (;;) {
    bool inserted = false;
    KeyRef state = FindOrInsert(key, requester, &inserted);
    if (!state) {
      return done(UnknownKeyError(key));
    }
    IdBatch got;
    bool served = false;
    std::shared_ptr<Waiter> waiter;  // set if parked
    {
      LockGuard<TinyMutex> lock(state->mu);
      if (!state->erased) {
        if (options_.gate && state->epoch != grant.epoch) MoveToEpochLocked(*state, grant);
        int64_t need = count;
        // Behind requests already parked: they are served first (FIFO), so
        // a take made after another never gets lower IDs than it.
        served = !state->HasParkedLocked() && ServeTakeLocked(*state, need, got, contiguous);
        if (served) {
          MaybeReserveLocked(*state);
        } else {
          // Both buffers are empty: park until a reservation lands or the deadline.
          waiter = ParkLocked(*state, need, std::move(got), std::move(done), contiguous);
        }
        // Served in part or whole: every take through the lock reports
        // (KeyState::reported counts in 32 bits).
        ReportIssuedLocked(*state);
      }
    }
    if (served) return done(std::move(got));
    if (!waiter) {  // lost a race with eviction; use a fresh entry
      Erase(state);
      continue;
    }
    // A new key always parks (nothing is buffered yet): now busy, it cannot
    // be the one evicted.
    if (inserted && keys_held_.load(std::memory_order_relaxed) >
                        static_cast<int64_t>(options_.max_cached_keys)) {
      EvictOverCapacity();
    }
    deadlines_.Add(clock_.Now() + options_.wait_deadline, std::move(state), waiter->id);
    return;
  }
}

void SegmentAllocator::AdmitNewKeyLocked(KeyState& state, std::string_view requester) {
  if (rules_.Match(state.key)) {
    state.auto_created = true;
    state.WaitLocked().creator = requester;
    // Its rule's series exists (IssuedCounters). A key no rule matches may
    // not exist: its series starts once the store has confirmed it
    // (RecordReservationMetricsLocked), so unknown keys add none.
  }
  const Clock::TimePoint now = clock_.Now();
  state.rate_at_ms[0] = state.rate_at_ms[1] = RateStamp(now);  // the rate's origin
  state.rate_issued = 0;
  state.rate_issued_between = 0;
}

void SegmentAllocator::MoveToEpochLocked(KeyState& state, const ShardGrant& grant) {
  // Held again at a new epoch (or for the first time): IDs buffered under
  // the old one may be below what another owner served since.
  state.DropCurrentLocked();
  state.has_next = false;
  state.max_known = false;  // another owner may have handed out IDs since
  state.last_issued = 0;
  state.epoch = grant.epoch;
}

bool SegmentAllocator::ServeTakeLocked(KeyState& state, int64_t& need, IdBatch& got,
                                       bool contiguous) {
  // The first take since parked requests were answered: the rate window
  // starts after it, and lock-free takes resume.
  const bool window_starts = state.window_at_next_take;
  state.window_at_next_take = false;
  const bool served =
      contiguous ? ServeBlockLocked(state, need, got) : ServeLocked(state, need, got);
  if (window_starts) {
    state.last_reserved_at = clock_.Now();
    state.issued_at_landing = static_cast<uint32_t>(state.IssuedLocked());
    if (state.has_current) state.cursor.SetLimit(FastLimitLocked(state, state.CurrentLocked()));
  }
  return served;
}

std::shared_ptr<SegmentAllocator::Waiter> SegmentAllocator::ParkLocked(KeyState& state,
                                                                       int64_t need, IdBatch got,
                                                                       TakeCallback done,
                                                                       bool contiguous) {
  auto waiter = std::make_shared<Waiter>();
  waiter->id = next_waiter_id_.fetch_add(1, std::memory_order_relaxed);
  waiter->need = need;
  waiter->contiguous = contiguous;
  waiter->got = std::move(got);
  waiter->done = std::move(done);
  state.WaitLocked().parked.push_back(waiter);
  // No lock-free take past a parked request (FastLimitLocked); a block
  // request can park with IDs left in the current segment.
  if (state.has_current) state.cursor.SetLimit(0);
  ++parked_now_;
  parked_total_.fetch_add(1, std::memory_order_relaxed);
  MaybeReserveLocked(state);
  return waiter;
}

bool SegmentAllocator::ServeLocked(KeyState& state, int64_t& need, IdBatch& got) {
  bool installed = false;
  while (need > 0) {
    if (state.CurrentLeftLocked() == 0) {
      if (!state.has_next) break;
      state.has_next = false;
      // Closed to TryTake until this request has its share: its IDs stay
      // one range per segment.
      InstallCurrentLocked(state, state.next, /*fast=*/false);
      installed = true;
    }
    int64_t first = 0;
    const int64_t n =
        state.cursor.TakeUpTo(state.cursor_word, need, state.CurrentLocked().size(), &first);
    if (n == 0) continue;  // the fast path took the rest meanwhile
    if (!got.ranges.empty() && got.ranges.back().last + 1 == first) {
      got.ranges.back().last += n;
    } else {
      got.ranges.push_back(IdRange{first, first + n - 1});
    }
    need -= n;
  }
  if (installed) state.cursor.SetLimit(FastLimitLocked(state, state.CurrentLocked()));
  return need == 0;
}

bool SegmentAllocator::ServeBlockLocked(KeyState& state, int64_t& need, IdBatch& got) {
  bool installed = false;
  bool served = false;
  for (;;) {
    const int64_t size = state.has_current ? state.CurrentLocked().size() : 0;
    if (state.CurrentLeftLocked() >= need) {
      int64_t first = 0;
      if (state.cursor.TakeExactly(state.cursor_word, need, size, &first)) {
        got.ranges.push_back(IdRange{first, first + need - 1});
        need = 0;
        served = true;
        break;
      }
      continue;  // the fast path took some meanwhile: look again
    }
    if (!state.has_next) break;
    // Too short: its rest is skipped. The next one becomes current even
    // when it is too short too, so that a larger one can be reserved.
    state.has_next = false;
    InstallCurrentLocked(state, state.next, /*fast=*/false);
    installed = true;
  }
  if (installed) state.cursor.SetLimit(FastLimitLocked(state, state.CurrentLocked()));
  return served;
}

void SegmentAllocator::InstallCurrentLocked(KeyState& state, const Buffer& b, bool fast) const {
  state.DropCurrentLocked();
  // Every ID below the new segment was handed out or never will be.
  state.last_issued = std::max(state.last_issued, b.first - 1);
  state.max_known = true;
  // A segment too large serves its first kMaxServedSegment IDs (the rest
  // are skipped, as after a restart).
  state.current_last = std::min(b.last, b.first + KeyState::kMaxServedSegment - 1);
  state.has_current = true;
  state.cursor.Open(state.cursor_word, b.first,
                    fast ? FastLimitLocked(state, Buffer{b.first, state.current_last}) : 0);
}

int64_t SegmentAllocator::FastLimitLocked(const KeyState& state, const Buffer& current) const {
  // Closed until the first take after a landing that answered parked
  // requests (KeyState::window_at_next_take), and while requests are
  // parked: they are served first, through the lock, so that a take made
  // after them never gets lower IDs (a pipelining caller sees its answers
  // increase in the order it asked).
  if (state.window_at_next_take || state.HasParkedLocked()) return 0;
  const int64_t size = std::min(current.size(), SegmentCursor::kMaxSize);
  // Until the next segment is here, takes past the prefetch point go
  // through the lock, where the reservation is started (and retried).
  if (state.has_next) return size;
  return std::min(
      size, static_cast<int64_t>(static_cast<double>(current.size()) * options_.prefetch_fraction));
}

void SegmentAllocator::OnDeadline(const KeyRef& state, uint64_t waiter_id) {
  std::shared_ptr<Waiter> w;
  {
    LockGuard<TinyMutex> lock(state->mu);
    if (!state->wait) return;  // already served
    auto& parked = state->wait->parked;
    auto it = std::find_if(parked.begin(), parked.end(),
                           [waiter_id](const auto& p) { return p->id == waiter_id; });
    if (it == parked.end()) return;  // already served
    w = std::move(*it);
    parked.erase(it);
    // The last one parked gone: lock-free takes may resume (FastLimitLocked).
    if (parked.empty() && state->has_current) {
      state->cursor.SetLimit(FastLimitLocked(*state, state->CurrentLocked()));
    }
    state->TidyLocked();
  }
  --parked_now_;
  ++timeouts_;
  SEQD_LOG(kWarn) << "parked request timed out key=" << LogValue(state->key) << " need=" << w->need;
  // The store's own error text stays in the logs and admin pages, never in
  // an answer to a client.
  TakeCallback done = std::move(w->done);
  done(MakeError(ErrorCode::kStoreUnavailable,
                 "no IDs available for this key within the deadline; the store did not answer"));
}

void SegmentAllocator::Shutdown() {
  shutting_down_ = true;
  std::vector<std::shared_ptr<Waiter>> failed;
  for (size_t i = 0; i < allocator_internal::kShardCount; ++i) {
    Shard& shard = shards_[i];
    ReaderLock shard_lock(shard.mu);
    shard.keys.ForEach([&](KeyState* state) {
      LockGuard<TinyMutex> lock(state->mu);
      for (auto& w : state->TakeParkedLocked()) failed.push_back(std::move(w));
      state->TidyLocked();
    });
  }
  for (auto& w : failed) {
    --parked_now_;
    TakeCallback done = std::move(w->done);
    done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  }
}

}  // namespace seqd
