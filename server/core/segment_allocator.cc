// Over 400 lines: one state machine per key (two buffers, the reservation in
// flight, parked requests, the dynamic step) whose invariants share one lock
// and are read together.
#include "server/core/segment_allocator.h"

#include <prometheus/counter.h>

#include <algorithm>
#include <cmath>
#include <list>
#include <shared_mutex>
#include <sstream>

#include "common/request_checks.h"
#include "server/base/log.h"
#include "server/base/tiny_mutex.h"
#include "server/core/key_table.h"
#include "server/metrics/metrics.h"
#include "storage/store_shedding.h"

namespace seqd {

int64_t IdBatch::count() const {
  int64_t n = 0;
  for (const IdRange& r : ranges) n += r.size();
  return n;
}

namespace {

constexpr size_t kShardCount = 64;
// How long a key the store reported missing is answered 404 from memory.
// Keys created through KeyAdmin are forgotten at once; rows inserted by SQL
// appear after at most this long.
constexpr Clock::Duration kUnknownKeyTtl = std::chrono::seconds(1);

std::atomic<uint64_t> next_allocator_id{1};  // 0 marks an unused handle-cache entry

}  // namespace

// One reserved segment: [first, last]; its step is its size.
struct SegmentAllocator::Buffer {
  int64_t first = 0;
  int64_t last = 0;
  int64_t size() const { return last - first + 1; }
};

// A request parked until a reservation lands. Guarded by its key's mutex.
struct SegmentAllocator::Waiter {
  int64_t need = 0;  // IDs still missing
  IdBatch got;
  TakeCallback done;
};

// What a key holds only while requests wait on it, before its first
// reservation, or after a failure: most keys in memory have none.
struct SegmentAllocator::WaitState {
  // Vectors, not deques: an empty deque costs ~600 bytes of heap.
  std::vector<std::shared_ptr<Waiter>> parked;
  std::optional<std::string> last_error;  // of the latest failed reservation
  std::string creator;          // auto-created keys, until the first reservation: who asked first
  Clock::TimePoint retry_at{};  // no reservation before this (after a failure)
  bool retry_scheduled = false;
};

// One key in memory. Kept small (a million keys are held at once): the
// rare parts live in WaitState; the metric label and the rule's step are
// worked out from the key when needed.
//
// Lock order: Shard::mu before KeyState::mu, never the reverse.
//
// The fast path (KeyFastPath: the current segment's cursor, the epoch, the
// erased flag) is read without mu; it is written only with mu held.
// Lifetime: reference-counted (KeyRef); the shard's table holds one.
struct SegmentAllocator::KeyState : KeyFastPath {
  explicit KeyState(std::string k) : key(std::move(k)) {}

  const std::string key;
  // Whole seconds since the allocator started, as of the coarse clock (the
  // latest sweep or reservation): stamped by lookups by name, and when IDs
  // taken without the lock are first counted.
  mutable std::atomic<uint32_t> last_used{0};
  mutable TinyMutex mu;
  // Everything below is guarded by mu.
  // Set before the key's first reservation is queued and never changed, so
  // read without mu too: a byte of its own, not a bit-field.
  bool auto_created = false;
  // Flags in one byte (a million keys are held at once).
  bool has_current : 1 = false;  // the current segment: cursor.Base() .. current_last
  bool has_next : 1 = false;
  bool loading : 1 = false;  // a reservation is queued or in flight
  // A landing just answered waiting requests: the rate window starts at
  // the next take, which goes through the lock (lock-free takes are off
  // until then). How long those clients took to ask again is not the
  // key's rate.
  bool window_at_next_take : 1 = false;
  uint32_t shard = 0;  // cluster mode: the key's shard (epoch: see KeyFastPath)
  int32_t reservations = 0;
  // How long reservations take lately, from sending to landing (a decaying
  // maximum, seconds): sizes the next step.
  float reserve_seconds = 0;
  int64_t current_last = 0;
  Buffer next;
  // The cursor's word (see KeyFastPath): what the fast path writes. Placed
  // here, more than a cache line past the fields takes read, so two threads
  // taking from one key do not drag those to and fro with it.
  CursorWord cursor_word;
  int64_t table_step = 0;  // 0 until the first reservation tells us
  int64_t step = 0;        // dynamic step
  // When the latest reservation landed, and IssuedLocked() then, before the
  // requests parked on it were served.
  Clock::TimePoint last_reserved_at{};
  int64_t issued_at_landing = 0;
  // IDs taken from segments no longer current; IssuedLocked() adds the
  // current one's. `reported`: how many of them the counters (metrics)
  // have been told of. Mutable: brought up to date by snapshots too.
  int64_t issued_closed = 0;
  mutable int64_t reported = 0;
  // Two samples of (time, IDs issued) for the recent rate: `rate[0]` at
  // least kRateSpacing older than `rate[1]`.
  struct RateSample {
    Clock::TimePoint at{};
    int64_t issued = 0;
  };
  mutable RateSample rate[2];
  prometheus::Counter* issued_counter = nullptr;  // with metrics, once confirmed
  std::unique_ptr<WaitState> wait;                // see WaitState; null: none

  Buffer CurrentLocked() const { return Buffer{cursor.Base(), current_last}; }
  // IDs of the current segment claimed so far (takes that failed at its end
  // may have run the word past it).
  int64_t UsedLocked() const {
    return has_current ? std::min(SegmentCursor::Used(cursor_word), CurrentLocked().size()) : 0;
  }
  int64_t CurrentLeftLocked() const {
    return has_current ? CurrentLocked().size() - UsedLocked() : 0;
  }
  int64_t IssuedLocked() const { return issued_closed + UsedLocked(); }
  // Ends the current segment; its unclaimed IDs are skipped.
  void DropCurrentLocked() {
    if (!has_current) return;
    issued_closed += std::min(cursor.Close(cursor_word), CurrentLocked().size());
    has_current = false;
  }
  bool HasParkedLocked() const { return wait && !wait->parked.empty(); }
  size_t ParkedLocked() const { return wait ? wait->parked.size() : 0; }
  // Removes and returns every parked request.
  std::vector<std::shared_ptr<Waiter>> TakeParkedLocked() {
    std::vector<std::shared_ptr<Waiter>> out;
    if (wait) out.swap(wait->parked);
    return out;
  }
  WaitState& WaitLocked() {
    if (!wait) wait = std::make_unique<WaitState>();
    return *wait;
  }
  // Frees the wait state once nothing in it matters any more.
  void TidyLocked() {
    if (wait && wait->parked.empty() && !wait->last_error && !wait->retry_scheduled &&
        wait->creator.empty()) {
      wait.reset();
    }
  }
};

void intrusive_ptr_add_ref(KeyFastPath* key) { key->refs.fetch_add(1, std::memory_order_relaxed); }

void intrusive_ptr_release(KeyFastPath* key) {
  if (key->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete static_cast<SegmentAllocator::KeyState*>(key);  // every KeyFastPath is one
  }
}

namespace {
// Lets the unknown-key map be searched with a string_view, without a copy.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};
}  // namespace

struct SegmentAllocator::Shard {
  // Shared by lookups, exclusive to insert and erase.
  mutable std::shared_mutex mu;
  // Everything below is guarded by mu.
  // The keys in memory; each entry holds a reference (intrusive_ptr_add_ref).
  KeyTable<KeyState> keys;
  // Keys the store recently said do not exist, with when to ask again.
  // Spares the store a query per request for a bad key. When full, the
  // oldest entry goes (never all at once: that would send a burst of
  // queries for keys just found missing to the store).
  struct Unknown {
    Clock::TimePoint ask_again;
    std::list<const std::string*>::iterator order;
  };
  std::unordered_map<std::string, Unknown, KeyHash, std::equal_to<>> unknown;
  std::list<const std::string*> unknown_order;  // the map's keys, oldest first

  ~Shard() {
    keys.ForEach([](KeyState* state) { intrusive_ptr_release(state); });
  }

  void ForgetUnknown(decltype(unknown)::iterator it) {
    unknown_order.erase(it->second.order);
    unknown.erase(it);
  }
};

SegmentAllocator::SegmentAllocator(SegmentStore& store, TaskRunner& db, Clock& clock,
                                   KeyRules rules, AllocatorOptions options)
    : store_(store),
      db_(db),
      clock_(clock),
      rules_(std::move(rules)),
      options_(options),
      shards_(new Shard[kShardCount]),
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

SegmentAllocator::Shard& SegmentAllocator::ShardFor(std::string_view key) const {
  return shards_[std::hash<std::string_view>{}(key) % kShardCount];
}

uint32_t SegmentAllocator::CoarseSeconds() const {
  const Clock::Duration since = coarse_now_.load(std::memory_order_relaxed) - started_;
  return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(since).count());
}

void SegmentAllocator::StampUse(KeyState& state) const {
  const uint32_t now = CoarseSeconds();
  // Written only when it changes: lookups of a busy key do not contend.
  if (state.last_used.load(std::memory_order_relaxed) != now) {
    state.last_used.store(now, std::memory_order_relaxed);
  }
}

Clock::TimePoint SegmentAllocator::LastUsedLocked(const KeyState& state) const {
  return started_ + std::chrono::seconds(state.last_used.load(std::memory_order_relaxed));
}

SegmentAllocator::KeyRef SegmentAllocator::Find(std::string_view key) const {
  Shard& shard = ShardFor(key);
  std::shared_lock lock(shard.mu);
  return KeyRef(shard.keys.Find(key));
}

SegmentAllocator::KeyRef SegmentAllocator::FindOrInsert(std::string_view key, bool* inserted) {
  Shard& shard = ShardFor(key);
  *inserted = false;
  {
    std::shared_lock lock(shard.mu);
    if (KeyState* found = shard.keys.Find(key)) {
      StampUse(*found);
      return KeyRef(found);
    }
  }
  std::lock_guard lock(shard.mu);
  if (KeyState* found = shard.keys.Find(key)) {  // inserted meanwhile
    StampUse(*found);
    return KeyRef(found);
  }
  if (!shard.unknown.empty()) {
    auto u = shard.unknown.find(key);
    if (u != shard.unknown.end()) {
      if (clock_.Now() < u->second.ask_again) return nullptr;  // known not to exist
      shard.ForgetUnknown(u);
    }
  }
  KeyRef state(new KeyState(std::string(key)));
  StampUse(*state);
  shard.keys.Insert(state.get());
  intrusive_ptr_add_ref(state.get());  // the table's reference
  keys_held_.fetch_add(1, std::memory_order_relaxed);
  *inserted = true;
  return state;
}

void SegmentAllocator::RememberUnknown(std::string_view key) {
  Shard& shard = ShardFor(key);
  const size_t per_shard = std::max<size_t>(1, options_.max_unknown_keys / kShardCount);
  std::lock_guard lock(shard.mu);
  if (auto u = shard.unknown.find(key); u != shard.unknown.end()) shard.ForgetUnknown(u);
  while (shard.unknown.size() >= per_shard) {
    shard.ForgetUnknown(shard.unknown.find(*shard.unknown_order.front()));
  }
  auto [u, _] = shard.unknown.emplace(std::string(key), Shard::Unknown{});
  u->second.ask_again = clock_.Now() + kUnknownKeyTtl;
  u->second.order = shard.unknown_order.insert(shard.unknown_order.end(), &u->first);
}

void SegmentAllocator::OnKeyCreated(std::string_view key) {
  Shard& shard = ShardFor(key);
  std::lock_guard lock(shard.mu);
  if (auto u = shard.unknown.find(key); u != shard.unknown.end()) shard.ForgetUnknown(u);
}

void SegmentAllocator::MarkErasedLocked(KeyState& state) const {
  state.erased.store(true, std::memory_order_relaxed);
  state.DropCurrentLocked();  // handles and lookups in flight now miss
  ReportIssuedLocked(state);
}

void SegmentAllocator::EraseLocked(Shard& shard, KeyState& state) {
  shard.keys.Erase(state.key);
  keys_held_.fetch_sub(1, std::memory_order_relaxed);
  intrusive_ptr_release(&state);  // the table's reference; may destroy `state`: last
}

void SegmentAllocator::Erase(const KeyRef& state) {
  Shard& shard = ShardFor(state->key);
  std::lock_guard lock(shard.mu);
  if (shard.keys.Find(state->key) == state.get()) EraseLocked(shard, *state);
}

namespace {
// Keys held at most for an exact least-recently-used search; above it the
// victim is the least recently used of kEvictionSamples keys picked at random.
constexpr int64_t kExactEvictionKeys = 256;
constexpr int kEvictionSamples = 32;
}  // namespace

SegmentAllocator::KeyRef SegmentAllocator::PickEvictionVictim() {
  KeyRef victim;
  Clock::TimePoint oldest{};
  auto consider = [&](KeyState* s) {
    std::lock_guard lock(s->mu);
    if (s->loading || s->HasParkedLocked()) return;  // busy: stays
    const Clock::TimePoint used = LastUsedLocked(*s);
    if (!victim || used < oldest) {
      victim = s;
      oldest = used;
    }
  };
  if (keys_held_.load(std::memory_order_relaxed) <= kExactEvictionKeys) {
    for (size_t i = 0; i < kShardCount; ++i) {
      std::shared_lock lock(shards_[i].mu);
      shards_[i].keys.ForEach(consider);
    }
    return victim;
  }
  for (int sample = 0; sample < kEvictionSamples; ++sample) {
    const uint64_t r =
        eviction_random_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) *
        0xBF58476D1CE4E5B9ull;
    Shard& shard = shards_[(r >> 32) % kShardCount];
    std::shared_lock lock(shard.mu);
    if (KeyState* s = shard.keys.AtOrAfter(static_cast<size_t>(r))) consider(s);
  }
  return victim;
}

void SegmentAllocator::EvictOverCapacity() {
  const auto cap = static_cast<int64_t>(options_.max_cached_keys);
  if (cap == 0) return;
  while (keys_held_.load(std::memory_order_relaxed) > cap) {
    KeyRef victim = PickEvictionVictim();
    if (!victim) return;  // every key is busy: over the cap until some finish
    Shard& shard = ShardFor(victim->key);
    std::lock_guard shard_lock(shard.mu);
    {
      std::lock_guard lock(victim->mu);
      if (victim->erased || victim->loading || victim->HasParkedLocked()) continue;  // raced
      MarkErasedLocked(*victim);
    }
    EraseLocked(shard, *victim);
    evicted_capacity_.fetch_add(1, std::memory_order_relaxed);
  }
}

void SegmentAllocator::Resolve(KeyHandle& handle) const {
  KeyRef state = Find(handle.key_);
  handle.word_ = state ? &state->cursor_word : nullptr;
  handle.fast_ = std::move(state);
}

void SegmentAllocator::Take(std::string_view key, int64_t count, TakeCallback done,
                            std::string_view requester) {
  // A key in memory was valid when it came in; a count out of range, a
  // shard not held or a shutdown miss here, and are answered below.
  if (std::optional<int64_t> first = TryTake(key, count)) {
    IdBatch got;
    got.ranges.push_back(IdRange{*first, *first + count - 1});
    return done(std::move(got));
  }
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckCount(count, options_.max_count); !s) return done(s.error());
  if (auto s = KeyRules::Validate(key); !s) return done(s.error());
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
  TakeSlow(key, count, std::move(done), requester, grant);
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
                                std::string_view requester, const ShardGrant& grant) {
  for (;;) {
    bool inserted = false;
    KeyRef state = FindOrInsert(key, &inserted);
    if (!state) {
      return done(MakeError(ErrorCode::kUnknownKey, "unknown key '" + std::string(key) + "'"));
    }
    IdBatch got;
    int64_t need = count;
    std::shared_ptr<Waiter> waiter;
    {
      std::unique_lock lock(state->mu);
      if (state->erased) {  // lost a race with eviction; use a fresh entry
        lock.unlock();
        Erase(state);
        continue;
      }
      if (inserted) {
        const AutoKeyRule* rule = rules_.Match(key);
        if (rule) {
          state->auto_created = true;
          state->WaitLocked().creator = requester;
          // A key no rule matches may not exist: its series start once the
          // store has confirmed it (OnReserved), so unknown keys add none.
          if (options_.metrics) {
            state->issued_counter = &options_.metrics->IdsIssued(KeyMetricLabel(key, rule));
          }
        }
        const Clock::TimePoint now = clock_.Now();
        state->rate[0] = state->rate[1] = KeyState::RateSample{now, 0};  // the rate's origin
      }
      if (options_.gate && state->epoch != grant.epoch) {
        // Held again at a new epoch (or for the first time): IDs buffered
        // under the old one may be below what another owner served since.
        state->DropCurrentLocked();
        state->has_next = false;
        state->shard = grant.shard;  // the same for every grant of this key
        state->epoch = grant.epoch;
      }
      // The first take since parked requests were answered: the rate window
      // starts after it, and lock-free takes resume.
      const bool window_starts = state->window_at_next_take;
      state->window_at_next_take = false;
      const bool served = ServeLocked(*state, need, got);
      if (window_starts) {
        state->last_reserved_at = clock_.Now();
        state->issued_at_landing = state->IssuedLocked();
        if (state->has_current) {
          state->cursor.SetLimit(FastLimitLocked(*state, state->CurrentLocked()));
        }
      }
      if (served) {
        MaybeReserveLocked(state);
        ReportIssuedLocked(*state);
        lock.unlock();
        return done(std::move(got));
      }
      // Both buffers are empty: park until a reservation lands or the deadline.
      waiter = std::make_shared<Waiter>();
      waiter->need = need;
      waiter->got = std::move(got);
      waiter->done = std::move(done);
      state->WaitLocked().parked.push_back(waiter);
      ++parked_now_;
      parked_total_.fetch_add(1, std::memory_order_relaxed);
      MaybeReserveLocked(state);
    }
    // A new key always parks (nothing is buffered yet): now busy, it cannot
    // be the one evicted.
    if (inserted && keys_held_.load(std::memory_order_relaxed) >
                        static_cast<int64_t>(options_.max_cached_keys)) {
      EvictOverCapacity();
    }
    clock_.RunAt(clock_.Now() + options_.wait_deadline,
                 [this, state, waiter] { OnDeadline(state, waiter); });
    return;
  }
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

void SegmentAllocator::InstallCurrentLocked(KeyState& state, const Buffer& b, bool fast) const {
  state.DropCurrentLocked();
  // A segment too large for the cursor serves its first kMaxSize IDs (the
  // rest are skipped, as after a restart): no step comes near that.
  state.current_last = std::min(b.last, b.first + SegmentCursor::kMaxSize - 1);
  state.has_current = true;
  state.cursor.Open(state.cursor_word, b.first,
                    fast ? FastLimitLocked(state, Buffer{b.first, state.current_last}) : 0);
}

int64_t SegmentAllocator::FastLimitLocked(const KeyState& state, const Buffer& current) const {
  // Closed until the first take after a landing that answered parked
  // requests (KeyState::window_at_next_take).
  if (state.window_at_next_take) return 0;
  const int64_t size = std::min(current.size(), SegmentCursor::kMaxSize);
  // Until the next segment is here, takes past the prefetch point go
  // through the lock, where the reservation is started (and retried).
  if (state.has_next) return size;
  return std::min(
      size, static_cast<int64_t>(static_cast<double>(current.size()) * options_.prefetch_fraction));
}

void SegmentAllocator::ReportIssuedLocked(const KeyState& state) const {
  const int64_t issued = state.IssuedLocked();
  if (issued == state.reported) return;
  // Taken since the last report: used at least as recently as the coarse
  // clock's last tick (the latest sweep or reservation).
  const uint32_t tick = CoarseSeconds();
  if (state.last_used.load(std::memory_order_relaxed) < tick) {
    state.last_used.store(tick, std::memory_order_relaxed);
  }
  if (state.issued_counter) {
    state.issued_counter->Increment(static_cast<double>(issued - state.reported));
  }
  state.reported = issued;
}

int64_t SegmentAllocator::NextStepLocked(KeyState& state, int64_t demand) {
  const Clock::TimePoint now = clock_.Now();
  int64_t floor = state.table_step > 0 ? state.table_step : 1;
  if (state.step == 0) state.step = floor;
  // Leaf's rule: double while segments last less than segment_duration,
  // halve when one lasted more than twice that. The first reservation has
  // no previous segment to measure, the second a partial one.
  if (state.reservations >= 2) {
    const Clock::Duration lasted = now - state.last_reserved_at;
    if (lasted < options_.segment_duration) {
      state.step = std::min(state.step * 2, options_.max_step);
    } else if (lasted > 2 * options_.segment_duration) {
      state.step = state.step / 2;
    }
  }
  // Doubling alone is too slow from a cold start: size the step from what
  // we measured, so the next segment lands before the current one runs out
  // (what is left of it at the prefetch point must outlast a few
  // reservations) and the two buffers hold min_runway at the current rate.
  state.step = std::max(state.step, MeasuredStepLocked(state, now));
  // A table step above max_step wins: we never reserve less than the row says.
  const int64_t ceiling = std::max(options_.max_step, floor);
  state.step = std::clamp(state.step, floor, ceiling);
  return std::clamp(std::max(state.step, demand), floor, ceiling);
}

int64_t SegmentAllocator::MeasuredStepLocked(const KeyState& state, Clock::TimePoint now) const {
  if (state.reservations == 0) return 0;
  // The rate while IDs were there to take: since the latest segment landed
  // (the requests that waited for it included). Not over the wait itself:
  // a stalled client asks for little, and the rate would understate it.
  constexpr double kMinWindowSeconds = 0.0001;
  const double elapsed = std::max(
      kMinWindowSeconds, std::chrono::duration<double>(now - state.last_reserved_at).count());
  const double rate = static_cast<double>(state.IssuedLocked() - state.issued_at_landing) / elapsed;
  // Four reservation latencies of margin: the database may slow down
  // further, and a failed reservation is retried after a backoff.
  constexpr double kLatencyMargin = 4;
  const double left_at_prefetch = 1.0 - options_.prefetch_fraction;
  const double for_latency = rate * kLatencyMargin * state.reserve_seconds / left_at_prefetch;
  // Both buffers together: about (2 - prefetch_fraction) steps.
  const double for_runway = rate * std::chrono::duration<double>(options_.min_runway).count() /
                            (2.0 - options_.prefetch_fraction);
  const double wanted = std::ceil(std::max(for_latency, for_runway));
  return wanted >= static_cast<double>(options_.max_step) ? options_.max_step
                                                          : static_cast<int64_t>(wanted);
}

void SegmentAllocator::MaybeReserveLocked(const KeyRef& state) {
  KeyState& s = *state;
  if (s.loading || s.has_next || shutting_down_) return;
  if (options_.gate && s.epoch == 0) return;  // not held: the next Take sets the epoch
  int64_t demand = 0;
  if (s.wait) {
    for (const auto& w : s.wait->parked) demand += w->need;
  }
  const bool due = s.CurrentLeftLocked() == 0 ||
                   static_cast<double>(s.UsedLocked()) >
                       static_cast<double>(s.CurrentLocked().size()) * options_.prefetch_fraction;
  if (!due) return;
  const Clock::TimePoint now = clock_.Now();
  if (s.wait && now < s.wait->retry_at) return ScheduleRetryLocked(state);
  // Before the first reservation we do not know the table step; the store
  // uses the row's own step then.
  const int64_t step_before = s.step;
  const int64_t step = s.reservations == 0 ? 0 : NextStepLocked(s, demand);
  PendingReservation pending{state, step, ShardGrant{s.shard, s.epoch}, now, {}};
  if (s.wait && s.reservations == 0) pending.creator = s.wait->creator;
  if (!reservation_queue_->Add(std::move(pending))) {
    s.step = step_before;  // nothing was reserved: the next try sizes it again
    // As many reservations wait for the store as keys fit in memory: it is
    // not keeping up. Try again after the backoff; parked requests wait
    // until then or their deadline.
    reservation_failures_.fetch_add(1, std::memory_order_relaxed);
    s.WaitLocked().last_error = "too many reservations waiting for the store";
    s.wait->retry_at = now + options_.retry_backoff;
    return ScheduleRetryLocked(state);
  }
  s.loading = true;
}

void SegmentAllocator::ScheduleRetryLocked(const KeyRef& state) {
  KeyState& s = *state;
  // Only if someone waits; later requests find retry_at themselves.
  if (!s.HasParkedLocked() || s.wait->retry_scheduled) return;
  s.wait->retry_scheduled = true;
  clock_.RunAt(s.wait->retry_at, [this, state] {
    std::lock_guard lock(state->mu);
    state->wait->retry_scheduled = false;  // the wait state stays while scheduled
    MaybeReserveLocked(state);
    state->TidyLocked();
  });
}

ReserveRequest SegmentAllocator::RequestFor(const PendingReservation& p) const {
  ReserveRequest r;
  r.key = p.state->key;
  if (p.step > 0) r.step = p.step;
  if (options_.gate) r.fence = ShardFence{p.grant.shard, options_.gate->instance(), p.grant.epoch};
  return r;
}

void SegmentAllocator::RunReservations(std::vector<PendingReservation> batch) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<ReserveRequest> requests;
  requests.reserve(batch.size());
  for (const PendingReservation& p : batch) requests.push_back(RequestFor(p));
  std::vector<Result<ReservedSegment>> results = store_.ReserveMany(requests);

  // First use of auto-created keys: create their rows (one transaction for
  // all), then reserve again. A row another process created meanwhile is
  // fine. Only rows found missing count against auto_create_rate.
  // (A key's `auto_created` is set before its first reservation is queued
  // and never changes.)
  std::vector<size_t> to_create;
  for (size_t i = 0; i < batch.size(); ++i) {
    const KeyState& s = *batch[i].state;
    if (results[i] || results[i].error().code != ErrorCode::kUnknownKey || !s.auto_created) {
      continue;
    }
    if (auto_create_limit_ && !auto_create_limit_->TryTake(batch[i].creator, clock_.Now())) {
      auto_create_refused_.fetch_add(1, std::memory_order_relaxed);
      std::ostringstream what;
      what << "too many new keys: a token may auto-create " << auto_create_limit_->rate()
           << " keys per second (bursts of " << auto_create_limit_->burst() << "); retry later";
      results[i] = MakeError(ErrorCode::kResourceExhausted, what.str());
      continue;
    }
    to_create.push_back(i);
  }
  if (!to_create.empty()) {
    std::vector<NewKey> rows;
    std::vector<ReserveRequest> retry;
    for (size_t i : to_create) {
      const AutoKeyRule* rule = rules_.Match(batch[i].state->key);
      rows.push_back(NewKey{batch[i].state->key, rule ? rule->step : 1});
      retry.push_back(std::move(requests[i]));
    }
    Status created = store_.CreateKeys(rows, "auto-created");
    std::vector<Result<ReservedSegment>> again =
        created ? store_.ReserveMany(retry)
                : std::vector<Result<ReservedSegment>>(retry.size(), created.error());
    for (size_t j = 0; j < to_create.size(); ++j) results[to_create[j]] = std::move(again[j]);
  }

  // A shed batch (the database queue is full) never reached the store: its
  // parked requests are answered now, not at their deadline.
  const bool shed = ShedThisThread();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (size_t i = 0; i < batch.size(); ++i) {
    const bool failed = !results[i];
    OnReserved(batch[i], std::move(results[i]), seconds, shed && failed);
  }
}

void SegmentAllocator::OnReserved(const PendingReservation& p, Result<ReservedSegment> result,
                                  double seconds, bool shed) {
  const KeyRef& state = p.state;
  const int64_t epoch = p.grant.epoch;
  std::vector<std::pair<std::shared_ptr<Waiter>, Result<IdBatch>>> finished;
  bool erase_key = false;
  {
    std::lock_guard lock(state->mu);
    KeyState& s = *state;
    const std::string metric_label =
        options_.metrics ? KeyMetricLabel(s.key, rules_.Match(s.key)) : std::string();
    if (options_.metrics) {
      // An unknown key (or one over the creation rate) is a client error:
      // the store answered.
      const bool unknown = !result && (result.error().code == ErrorCode::kUnknownKey ||
                                       result.error().code == ErrorCode::kResourceExhausted);
      options_.metrics->SetStoreUp(static_cast<bool>(result) || unknown);
      // Per-key series only for keys the store confirmed (or a rule's label).
      if (result && !s.issued_counter) {
        s.issued_counter = &options_.metrics->IdsIssued(metric_label);
      }
      if (!unknown) {
        options_.metrics->ReservationDone(
            s.issued_counter ? metric_label : std::string(kUnconfirmedKeyLabel),
            static_cast<bool>(result), seconds);
      }
    }
    s.loading = false;
    const bool fenced = !result && result.error().code == ErrorCode::kNotServing;
    if (options_.gate && (epoch != s.epoch || fenced)) {
      // Reserved under an epoch we no longer hold (the IDs are skipped, as
      // after a restart), or fenced out: the shard is someone else's.
      if (fenced) {
        SEQD_LOG(kInfo) << "reservation fenced out key=" << s.key << " shard=" << s.shard
                        << " epoch=" << epoch;
        options_.gate->Fenced(s.shard, epoch);
        if (epoch == s.epoch) {
          s.DropCurrentLocked();
          s.has_next = false;
          s.epoch = 0;
          for (auto& w : s.TakeParkedLocked()) {
            finished.emplace_back(
                w, MakeError(ErrorCode::kWrongOwner, "the key's shard moved to another instance"));
          }
        }
      }
      result = MakeError(ErrorCode::kWrongOwner, "stale epoch");
    } else if (result) {
      ++reservations_;
      // A finer use stamp for the keys used from now on (max_cached_keys
      // evicts by it) than the sweeps alone give.
      coarse_now_.store(clock_.Now(), std::memory_order_relaxed);
      const ReservedSegment& seg = *result;
      SEQD_LOG(kInfo) << "reserved key=" << s.key << " range=[" << seg.first << "," << seg.last
                      << "] step=" << (seg.last - seg.first + 1) << " table_step=" << seg.table_step
                      << " duration_ms=" << seconds * 1000 << " parked=" << s.ParkedLocked();
      const Buffer b{seg.first, seg.last};
      if (s.CurrentLeftLocked() == 0) {
        InstallCurrentLocked(s, b, /*fast=*/true);
      } else {
        s.next = b;
        s.has_next = true;
        s.cursor.SetLimit(FastLimitLocked(s, s.CurrentLocked()));  // the rest, lock-free
      }
      s.table_step = seg.table_step;
      if (s.step == 0) s.step = std::max<int64_t>(seg.table_step, 1);
      s.last_reserved_at = clock_.Now();
      SampleRateLocked(s, s.last_reserved_at);
      ++s.reservations;
      // Sending to landing on our clock: queueing for a database thread
      // counts as much as the database's own latency.
      const double latency = std::chrono::duration<double>(s.last_reserved_at - p.sent_at).count();
      s.reserve_seconds = static_cast<float>(std::max<double>(latency, s.reserve_seconds / 2));
      s.issued_at_landing = s.IssuedLocked();
      if (s.wait) {
        WaitState& w = *s.wait;
        w.last_error.reset();
        w.creator.clear();  // the row exists now
        size_t served = 0;
        for (; served < w.parked.size(); ++served) {
          Waiter& waiter = *w.parked[served];
          if (!ServeLocked(s, waiter.need, waiter.got)) break;
          finished.emplace_back(w.parked[served], std::move(waiter.got));
        }
        w.parked.erase(w.parked.begin(), w.parked.begin() + static_cast<ptrdiff_t>(served));
        if (served > 0 && s.has_current) {
          s.window_at_next_take = true;
          s.cursor.SetLimit(0);
        }
        if (w.parked.empty()) w.parked.shrink_to_fit();  // a burst's room goes back
      }
    } else {
      const ErrorCode code = result.error().code;
      const bool client_error =
          code == ErrorCode::kUnknownKey || code == ErrorCode::kResourceExhausted;
      if (!client_error) ++reservation_failures_;
      s.WaitLocked().last_error = result.error().message;
      if (client_error) {
        SEQD_LOG(kDebug) << ErrorCodeName(code) << " key=" << s.key;  // not ours
      } else {
        SEQD_LOG(kWarn) << "reservation failed key=" << s.key
                        << " code=" << ErrorCodeName(result.error().code)
                        << " duration_ms=" << seconds * 1000 << " parked=" << s.ParkedLocked()
                        << ": " << result.error().message;
      }
      if (client_error) {
        // The row is gone (or never existed), or may not be created now:
        // fail everyone and forget the key.
        const Error error = code == ErrorCode::kUnknownKey
                                ? MakeError(ErrorCode::kUnknownKey, "unknown key '" + s.key + "'")
                                : result.error();
        for (auto& w : s.TakeParkedLocked()) finished.emplace_back(w, error);
        MarkErasedLocked(s);
        erase_key = true;
      } else {
        s.wait->retry_at = clock_.Now() + options_.retry_backoff;
        if (shed) {
          for (auto& w : s.TakeParkedLocked()) finished.emplace_back(w, ShedError());
        }
      }
    }
    if (!s.erased) MaybeReserveLocked(state);
    ReportIssuedLocked(s);
    s.TidyLocked();
  }
  if (erase_key) {
    Erase(state);
    if (!state->auto_created) RememberUnknown(state->key);  // auto keys: rate refusals
  }
  for (auto& [w, r] : finished) {
    --parked_now_;
    // Moved out so the pending deadline timer does not keep the caller's
    // state (its connection) alive.
    TakeCallback done = std::move(w->done);
    done(std::move(r));
  }
}

void SegmentAllocator::OnDeadline(const KeyRef& state, const std::shared_ptr<Waiter>& w) {
  {
    std::lock_guard lock(state->mu);
    if (!state->wait) return;  // already served
    auto& parked = state->wait->parked;
    auto it = std::find(parked.begin(), parked.end(), w);
    if (it == parked.end()) return;  // already served
    parked.erase(it);
    state->TidyLocked();
  }
  --parked_now_;
  ++timeouts_;
  SEQD_LOG(kWarn) << "parked request timed out key=" << state->key << " need=" << w->need;
  // The store's own error text stays in the logs and admin pages, never in
  // an answer to a client.
  TakeCallback done = std::move(w->done);
  done(MakeError(ErrorCode::kStoreUnavailable,
                 "no IDs available for this key within the deadline; the store did not answer"));
}

void SegmentAllocator::OnTableStepChanged(std::string_view key, int64_t table_step) {
  KeyRef state = Find(key);
  if (!state) return;
  std::lock_guard lock(state->mu);
  state->table_step = table_step;
  state->step = std::max(state->step, table_step);
}

size_t SegmentAllocator::EvictIdle() {
  // IDs taken without the lock since they were last counted are counted
  // now, and stamp their key with the coarse clock (ReportIssuedLocked):
  // such a use is dated to within a sweep interval, so a key used only that
  // way may leave up to one interval early or late.
  const Clock::TimePoint now = clock_.Now();
  size_t dropped = 0;
  std::vector<KeyState*> idle;
  for (size_t i = 0; i < kShardCount; ++i) {
    Shard& shard = shards_[i];
    std::lock_guard shard_lock(shard.mu);
    shard.keys.ForEach([&](KeyState* state) {
      std::lock_guard lock(state->mu);
      SampleRateLocked(*state, now);
      ReportIssuedLocked(*state);
      if (!state->loading && !state->HasParkedLocked() &&
          now - LastUsedLocked(*state) >= options_.idle_timeout) {
        MarkErasedLocked(*state);
        idle.push_back(state);
      }
    });
    for (KeyState* state : idle) EraseLocked(shard, *state);  // after the walk: it moves entries
    dropped += idle.size();
    idle.clear();
  }
  coarse_now_.store(now, std::memory_order_relaxed);
  evicted_idle_.fetch_add(static_cast<int64_t>(dropped), std::memory_order_relaxed);
  return dropped;
}

void SegmentAllocator::RefreshRegisteredKeys(std::function<void(Result<size_t>)> done) {
  db_.Post([this, done = std::move(done)] {
    // Check each registered key held in memory against the table.
    std::vector<KeyRef> registered;
    for (size_t i = 0; i < kShardCount; ++i) {
      std::shared_lock lock(shards_[i].mu);
      shards_[i].keys.ForEach([&](KeyState* state) {
        if (!rules_.Match(state->key)) registered.emplace_back(state);
      });
    }
    std::vector<KeyRef> gone;
    for (const auto& state : registered) {
      Result<KeyRow> row = store_.GetKey(state->key);
      if (row) continue;
      if (row.error().code != ErrorCode::kUnknownKey) {
        if (done) done(row.error());
        return;
      }
      std::lock_guard lock(state->mu);
      if (state->loading || state->HasParkedLocked()) continue;  // its reservation will tell
      MarkErasedLocked(*state);
      gone.push_back(state);
    }
    for (const auto& state : gone) Erase(state);
    if (done) done(gone.size());
  });
}

void SegmentAllocator::Shutdown() {
  shutting_down_ = true;
  std::vector<std::shared_ptr<Waiter>> failed;
  for (size_t i = 0; i < kShardCount; ++i) {
    std::shared_lock shard_lock(shards_[i].mu);
    shards_[i].keys.ForEach([&](KeyState* state) {
      std::lock_guard lock(state->mu);
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

namespace {
// The rate is measured from the older of two samples at least this far
// apart: over the last 30 to 60 seconds, as samples are taken (every
// reservation, sweep and scrape).
constexpr Clock::Duration kRateSpacing = std::chrono::seconds(30);
}  // namespace

void SegmentAllocator::SampleRateLocked(const KeyState& s, Clock::TimePoint now) {
  if (now - s.rate[1].at < kRateSpacing) return;
  s.rate[0] = s.rate[1];
  s.rate[1] = KeyState::RateSample{now, s.IssuedLocked()};
}

KeySnapshot SegmentAllocator::SnapshotLocked(const KeyState& s) const {
  auto buffer = [](bool ready, const Buffer& b, int64_t used) {
    BufferSnapshot out;
    out.ready = ready && used < b.size();
    out.first = b.first;
    out.next = b.first + used;
    out.last = b.last;
    out.step = b.size();
    return out;
  };
  ReportIssuedLocked(s);  // the counters are current at every scrape
  KeySnapshot snap;
  snap.key = s.key;
  snap.auto_created = s.auto_created;
  snap.loading = s.loading;
  snap.current =
      buffer(s.has_current, s.has_current ? s.CurrentLocked() : Buffer{}, s.UsedLocked());
  snap.next = buffer(s.has_next, s.next, 0);
  snap.step = s.step;
  snap.table_step = s.table_step;
  snap.parked = static_cast<int64_t>(s.ParkedLocked());
  snap.reservations = s.reservations;
  if (s.wait) snap.last_error = s.wait->last_error;
  const Clock::TimePoint now = clock_.Now();
  snap.idle_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - LastUsedLocked(s)).count();
  SampleRateLocked(s, now);
  {
    const KeyState::RateSample& ref = s.rate[0];
    const double secs = std::chrono::duration<double>(now - ref.at).count();
    const int64_t issued = s.IssuedLocked();
    if (secs > 0 && issued > ref.issued) snap.rate_per_s = (issued - ref.issued) / secs;
  }
  if (snap.rate_per_s > 0) {
    const int64_t left = s.CurrentLeftLocked() + (s.has_next ? s.next.size() : 0);
    snap.runway_s = static_cast<double>(left) / snap.rate_per_s;
  }
  return snap;
}

std::vector<KeySnapshot> SegmentAllocator::Snapshot() const {
  std::vector<KeySnapshot> out;
  for (size_t i = 0; i < kShardCount; ++i) {
    std::shared_lock shard_lock(shards_[i].mu);
    shards_[i].keys.ForEach([&](KeyState* state) {
      std::lock_guard lock(state->mu);
      out.push_back(SnapshotLocked(*state));
    });
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

std::vector<KeySnapshot> SegmentAllocator::Snapshot(std::string_view after, size_t limit) const {
  std::vector<KeyRef> page;
  for (size_t i = 0; i < kShardCount; ++i) {
    std::shared_lock shard_lock(shards_[i].mu);
    shards_[i].keys.ForEach([&](KeyState* state) {
      if (state->key > after) page.emplace_back(state);
    });
  }
  auto by_key = [](const auto& a, const auto& b) { return a->key < b->key; };
  if (page.size() > limit) {
    std::nth_element(page.begin(), page.begin() + static_cast<ptrdiff_t>(limit), page.end(),
                     by_key);
    page.resize(limit);
  }
  std::sort(page.begin(), page.end(), by_key);
  std::vector<KeySnapshot> out;
  out.reserve(page.size());
  for (const auto& state : page) {
    std::lock_guard lock(state->mu);
    out.push_back(SnapshotLocked(*state));
  }
  return out;
}

std::optional<KeySnapshot> SegmentAllocator::SnapshotKey(std::string_view key) const {
  KeyRef state = Find(key);
  if (!state) return std::nullopt;
  std::lock_guard lock(state->mu);
  return SnapshotLocked(*state);
}

AllocatorStats SegmentAllocator::stats() const {
  AllocatorStats st;
  st.reservations = reservations_;
  st.reservation_failures = reservation_failures_;
  st.parked_now = parked_now_;
  st.timeouts = timeouts_;
  st.parked_total = parked_total_.load(std::memory_order_relaxed);
  st.keys_in_memory = keys_held_;
  st.evicted_idle = evicted_idle_;
  st.evicted_capacity = evicted_capacity_;
  st.auto_create_refused = auto_create_refused_;
  for (size_t i = 0; i < kShardCount; ++i) {
    std::shared_lock lock(shards_[i].mu);
    st.unknown_keys += static_cast<int64_t>(shards_[i].unknown.size());
  }
  return st;
}

}  // namespace seqd
