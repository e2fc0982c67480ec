// SegmentAllocator: the key table (the shards of keys in memory and of keys
// recently found missing) and eviction: idle keys, keys beyond
// max_cached_keys, registered keys whose rows are gone.
#include <algorithm>
#include <new>

#include "common/mutex.h"
#include "server/core/key_state_pool.h"
#include "server/core/segment_allocator.h"

namespace seqd {

using allocator_internal::kShardCount;

namespace {

// How long a key the store reported missing is answered 404 from memory.
// Keys created through KeyAdmin are forgotten at once; rows inserted by SQL
// appear after at most this long.
constexpr Clock::Duration kUnknownKeyTtl = std::chrono::seconds(1);

// Keys held at most for an exact least-recently-used search; above it the
// victim is the least recently used of kEvictionSamples keys picked at random.
constexpr int64_t kExactEvictionKeys = 256;
constexpr int kEvictionSamples = 32;

}  // namespace

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
  ReaderLock lock(shard.mu);
  return KeyRef(shard.keys.Find(key));
}

SegmentAllocator::KeyRef SegmentAllocator::FindOrInsert(std::string_view key,
                                                        std::string_view requester,
                                                        bool* inserted) {
  Shard& shard = ShardFor(key);
  *inserted = false;
  {
    ReaderLock lock(shard.mu);
    if (KeyState* found = shard.keys.Find(key)) {
      StampUse(*found);
      return KeyRef(found);
    }
  }
  WriterLock lock(shard.mu);
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
  // Freed by intrusive_ptr_release (segment_allocator.cc).
  static_assert(alignof(KeyState) <= allocator_internal::KeyStatePool::kBlockAlign);
  KeyRef state(new (allocator_internal::KeyStatePool::Allocate(sizeof(KeyState))) KeyState(key));
  StampUse(*state);
  {
    // Admitted before any other thread can find it: one that does must
    // never queue its first reservation as a key no rule creates.
    LockGuard<TinyMutex> admit(state->mu);
    AdmitNewKeyLocked(*state, requester);
  }
  shard.keys.Insert(state.get());
  intrusive_ptr_add_ref(state.get());  // the table's reference
  keys_held_.fetch_add(1, std::memory_order_relaxed);
  *inserted = true;
  return state;
}

void SegmentAllocator::RememberUnknown(std::string_view key) {
  Shard& shard = ShardFor(key);
  const size_t per_shard = std::max<size_t>(1, options_.max_unknown_keys / kShardCount);
  WriterLock lock(shard.mu);
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
  WriterLock lock(shard.mu);
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
  WriterLock lock(shard.mu);
  if (shard.keys.Find(state->key) == state.get()) EraseLocked(shard, *state);
}

SegmentAllocator::KeyRef SegmentAllocator::PickEvictionVictim() {
  KeyRef victim;
  Clock::TimePoint oldest{};
  auto consider = [&](KeyState* s) {
    LockGuard<TinyMutex> lock(s->mu);
    if (s->loading || s->HasParkedLocked()) return;  // busy: stays
    const Clock::TimePoint used = LastUsedLocked(*s);
    if (!victim || used < oldest) {
      victim = s;
      oldest = used;
    }
  };
  if (keys_held_.load(std::memory_order_relaxed) <= kExactEvictionKeys) {
    for (size_t i = 0; i < kShardCount; ++i) {
      Shard& shard = shards_[i];
      ReaderLock lock(shard.mu);
      shard.keys.ForEach(consider);
    }
    return victim;
  }
  for (int sample = 0; sample < kEvictionSamples; ++sample) {
    const uint64_t r =
        eviction_random_.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) *
        0xBF58476D1CE4E5B9ull;
    Shard& shard = shards_[(r >> 32) % kShardCount];
    ReaderLock lock(shard.mu);
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
    WriterLock shard_lock(shard.mu);
    {
      LockGuard<TinyMutex> lock(victim->mu);
      if (victim->erased || victim->loading || victim->HasParkedLocked()) continue;  // raced
      MarkErasedLocked(*victim);
    }
    EraseLocked(shard, *victim);
    evicted_capacity_.fetch_add(1, std::memory_order_relaxed);
  }
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
    WriterLock shard_lock(shard.mu);
    shard.keys.ForEach([&](KeyState* state) {
      LockGuard<TinyMutex> lock(state->mu);
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
      Shard& shard = shards_[i];
      ReaderLock lock(shard.mu);
      shard.keys.ForEach([&](KeyState* state) {
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
      LockGuard<TinyMutex> lock(state->mu);
      if (state->loading || state->HasParkedLocked()) continue;  // its reservation will tell
      MarkErasedLocked(*state);
      gone.push_back(state);
    }
    for (const auto& state : gone) Erase(state);
    if (done) done(gone.size());
  });
}

}  // namespace seqd
