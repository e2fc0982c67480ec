// SegmentAllocator: what OpenIM asks besides IDs: the largest ID
// handed out per key (MAX_IDS), and the durable per-key min seqs (GET and
// SET_MIN_SEQS, the store's seqd_min_seq table). Store calls run on the
// database runner; in cluster mode the gate says which keys are ours and
// fences the min-seq writes.
#include <algorithm>
#include <map>
#include <set>

#include "common/mutex.h"
#include "server/core/segment_allocator.h"

namespace seqd {
namespace {

// How long MAX_IDS waits before looking again at a key whose first
// reservation is in flight (its segment may be committed, not yet here).
constexpr auto kMaxRetryInterval = std::chrono::milliseconds(5);

}  // namespace

Status SegmentAllocator::CheckKeyList(const std::vector<std::string>& keys) {
  if (keys.size() > kMaxKeysPerCall) {
    return MakeError(ErrorCode::kTooLarge,
                     "at most " + std::to_string(kMaxKeysPerCall) + " keys per request");
  }
  for (const std::string& k : keys) {
    if (Status s = ValidateClientKey(k); !s) return s;
  }
  return OkStatus();
}

Status SegmentAllocator::CheckMinSeqList(const std::vector<MinSeqValue>& values) {
  if (values.size() > kMaxKeysPerCall) {
    return MakeError(ErrorCode::kTooLarge,
                     "at most " + std::to_string(kMaxKeysPerCall) + " keys per request");
  }
  std::set<std::string_view> seen;
  for (const MinSeqValue& v : values) {
    if (Status s = ValidateClientKey(v.key); !s) return s;
    if (v.min_seq < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "the seq of key '" + v.key + "' must be >= 0");
    }
    if (!seen.insert(v.key).second) {
      return MakeError(ErrorCode::kInvalidArgument, "key '" + v.key + "' is listed twice");
    }
  }
  return OkStatus();
}

std::optional<int64_t> SegmentAllocator::MemoryMax(std::string_view key, const ShardGrant& grant,
                                                   bool* loading) const {
  *loading = false;
  KeyRef state = Find(key);
  if (!state) return std::nullopt;
  LockGuard<TinyMutex> lock(state->mu);
  if (state->erased) return std::nullopt;
  // Held under another epoch: another owner may have handed out IDs since,
  // and a reservation in flight under it is fenced out.
  if (options_.gate && state->epoch != grant.epoch) return std::nullopt;
  if (state->max_known) return state->MaxLocked();
  *loading = state->loading;
  return std::nullopt;
}

void SegmentAllocator::MaxIds(std::vector<std::string> keys, ValuesCallback done) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckKeyList(keys); !s) return done(s.error());
  std::vector<ShardGrant> grants(keys.size());
  if (options_.gate) {
    for (size_t i = 0; i < keys.size(); ++i) {
      grants[i] = options_.gate->Check(keys[i]);
      if (!grants[i].serving()) {
        return done(MakeError(ErrorCode::kWrongOwner, "this instance does not own the key now"));
      }
    }
  }
  std::vector<size_t> todo(keys.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  auto out = std::make_shared<std::vector<int64_t>>(keys.size(), 0);
  auto shared_keys = std::make_shared<std::vector<std::string>>(std::move(keys));
  ResolveMaxIds(std::move(shared_keys), std::move(out), std::move(todo), std::move(grants),
                clock_.Now() + options_.wait_deadline, std::move(done));
}

void SegmentAllocator::ResolveMaxIds(std::shared_ptr<std::vector<std::string>> keys,
                                     std::shared_ptr<std::vector<int64_t>> out,
                                     std::vector<size_t> todo, std::vector<ShardGrant> grants,
                                     Clock::TimePoint deadline, ValuesCallback done) {
  // From memory first: keys held here with a segment installed.
  std::vector<size_t> unknown;
  for (size_t i : todo) {
    bool loading = false;
    if (std::optional<int64_t> v = MemoryMax((*keys)[i], grants[i], &loading)) {
      (*out)[i] = *v;
    } else {
      unknown.push_back(i);
    }
  }
  if (unknown.empty()) return done(std::move(*out));
  db_.Post([this, keys, out, unknown = std::move(unknown), grants = std::move(grants), deadline,
            done = std::move(done)]() mutable {
    std::vector<std::string> ask;
    ask.reserve(unknown.size());
    for (size_t i : unknown) ask.push_back((*keys)[i]);
    Result<std::vector<int64_t>> table = store_.GetMaxIds(ask);
    if (!table) return done(table.error());
    // Read after the store: a segment installed meanwhile says more than
    // the table (its IDs are not all handed out). One whose reservation
    // is still in flight may be in the table already: look again shortly.
    std::vector<size_t> again;
    for (size_t j = 0; j < unknown.size(); ++j) {
      const size_t i = unknown[j];
      bool loading = false;
      if (std::optional<int64_t> v = MemoryMax((*keys)[i], grants[i], &loading)) {
        (*out)[i] = *v;
      } else if (loading) {
        again.push_back(i);
      } else {
        (*out)[i] = std::max<int64_t>(0, (*table)[j]);
      }
    }
    if (again.empty()) return done(std::move(*out));
    const Clock::TimePoint next = clock_.Now() + kMaxRetryInterval;
    if (next >= deadline) {
      return done(MakeError(ErrorCode::kStoreUnavailable,
                            "the key's first segment did not land within the deadline"));
    }
    clock_.RunAt(next, [this, keys, out, again = std::move(again), grants = std::move(grants),
                        deadline, done = std::move(done)]() mutable {
      ResolveMaxIds(keys, out, std::move(again), std::move(grants), deadline, std::move(done));
    });
  });
}

void SegmentAllocator::GetMinSeqs(std::vector<std::string> keys, ValuesCallback done) {
  ReadKeyValues(std::move(keys), &SegmentStore::GetMinSeqs, std::move(done));
}

void SegmentAllocator::GetAllocTimes(std::vector<std::string> keys, ValuesCallback done) {
  ReadKeyValues(std::move(keys), &SegmentStore::GetAllocTimes, std::move(done));
}

void SegmentAllocator::ReadKeyValues(std::vector<std::string> keys, KeyValuesRead read,
                                     ValuesCallback done) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckKeyList(keys); !s) return done(s.error());
  if (keys.empty()) return done(std::vector<int64_t>{});
  db_.Post(
      [this, keys = std::move(keys), read, done = std::move(done)] { done((store_.*read)(keys)); });
}

Status SegmentAllocator::CheckUserId(std::string_view user) {
  if (user.empty() || user.size() > kMaxUserIdLength) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a user id is 1 to " + std::to_string(kMaxUserIdLength) + " bytes");
  }
  for (char c : user) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return MakeError(ErrorCode::kInvalidArgument, "a user id has no control characters");
    }
  }
  return OkStatus();
}

void SegmentAllocator::GetUserSeqs(std::string user, UserSeqField field,
                                   std::vector<std::string> convs, ValuesCallback done) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckUserId(user); !s) return done(s.error());
  if (Status s = CheckKeyList(convs); !s) return done(s.error());
  if (convs.empty()) return done(std::vector<int64_t>{});
  db_.Post([this, user = std::move(user), field, convs = std::move(convs),
            done = std::move(done)] { done(store_.GetUserSeqs(user, field, convs)); });
}

void SegmentAllocator::SetUserSeqs(std::string user, UserSeqField field, bool raise_only,
                                   std::vector<UserSeqValue> values,
                                   std::function<void(Status)> done) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckUserId(user); !s) return done(s);
  std::vector<MinSeqValue> as_keys;  // the same checks as min seqs: keys, values, twice
  as_keys.reserve(values.size());
  for (const UserSeqValue& v : values) as_keys.push_back(MinSeqValue{v.conv, v.seq});
  if (Status s = CheckMinSeqList(as_keys); !s) return done(s);
  if (values.empty()) return done(OkStatus());
  db_.Post([this, user = std::move(user), field, raise_only, values = std::move(values),
            done = std::move(done)] { done(store_.SetUserSeqs(user, field, raise_only, values)); });
}

void SegmentAllocator::SetMinSeqs(std::vector<MinSeqValue> values,
                                  std::function<void(Status)> done) {
  if (shutting_down_) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
  if (Status s = CheckMinSeqList(values); !s) return done(s);
  if (values.empty()) return done(OkStatus());
  // Cluster mode: every key's shard held now; one fence per shard, checked
  // inside the write's transaction.
  std::vector<ShardFence> fences;
  if (options_.gate) {
    std::map<uint32_t, int64_t> held;
    for (const MinSeqValue& v : values) {
      const ShardGrant g = options_.gate->Check(v.key);
      if (!g.serving()) {
        return done(MakeError(ErrorCode::kWrongOwner, "this instance does not own the key now"));
      }
      held[g.shard] = g.epoch;
    }
    for (const auto& [shard, epoch] : held) {
      fences.push_back(ShardFence{shard, options_.gate->instance(), epoch});
    }
  }
  db_.Post([this, values = std::move(values), fences = std::move(fences), done = std::move(done)] {
    uint32_t refused = 0;
    Status s = store_.SetMinSeqs(values, fences, &refused);
    if (!s && s.error().code == ErrorCode::kNotServing && options_.gate) {
      // Fenced out: nothing was written; the shard is someone else's.
      for (const ShardFence& f : fences) {
        if (f.shard == refused) options_.gate->Fenced(f.shard, f.epoch);
      }
      return done(MakeError(ErrorCode::kWrongOwner, "the key's shard moved to another instance"));
    }
    done(std::move(s));
  });
}

}  // namespace seqd
