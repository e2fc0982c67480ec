#include "server/core/dense_allocator.h"

#include <prometheus/counter.h>

#include <chrono>
#include <utility>

namespace seqd {
namespace {

constexpr std::string_view kAutoCreatedDescription = "auto-created (dense)";

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DenseAllocator::DenseAllocator(SegmentStore& store, TaskRunner& db, Clock& clock, KeyRules rules,
                               DenseOptions options)
    : store_(store),
      db_(db),
      clock_(clock),
      rules_(std::move(rules)),
      options_(options),
      issued_(options_.metrics, rules_) {
  if (options_.auto_create_rate > 0) {
    auto_create_limit_ =
        std::make_unique<TokenBuckets>(options_.auto_create_rate, options_.auto_create_burst);
  }
  queue_ = std::make_unique<BatchQueue<std::string>>(
      db_, kMaxBatch, std::max<size_t>(1, options_.reservation_flushes), 0,
      [this](std::vector<std::string> keys) { Flush(std::move(keys)); });
}

DenseAllocator::~DenseAllocator() = default;

bool DenseAllocator::IsDense(std::string_view key) const {
  const AutoKeyRule* rule = rules_.Match(key);
  return rule && rule->mode == KeyMode::kDense;
}

Status DenseAllocator::ValidateToken(std::string_view token) {
  if (token.size() > kMaxBlockTokenLength) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "token is " + std::to_string(token.size()) + " bytes; the limit is " +
                         std::to_string(kMaxBlockTokenLength));
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return MakeError(ErrorCode::kInvalidArgument,
                       "token may only contain printable ASCII characters, no space");
    }
  }
  return OkStatus();
}

void DenseAllocator::Take(std::string_view key, int64_t count, std::string_view token,
                          TakeCallback done, std::string_view requester) {
  if (shutting_down_.load(std::memory_order_acquire)) {
    return done(MakeError(ErrorCode::kShuttingDown, "shutting down"));
  }
  if (options_.gate && !options_.gate->Check(key).serving()) {
    return done(MakeError(ErrorCode::kWrongOwner, "this instance does not hold the key's shard"));
  }
  if (waiting_now_.load(std::memory_order_relaxed) >= static_cast<int64_t>(options_.max_waiting)) {
    return done(MakeError(ErrorCode::kStoreUnavailable, "too many requests wait for the store"));
  }
  bool add = false;
  {
    MutexLock lock(mu_);
    KeyQueue& q = keys_[std::string(key)];
    q.waiting.push_back(
        Waiting{count, std::string(token), std::move(done), std::string(requester)});
    add = !q.queued;
    q.queued = true;
  }
  waiting_now_.fetch_add(1, std::memory_order_relaxed);
  // The queue is unbounded (waiting_now_ bounds it), so Add cannot refuse.
  if (add) (void)queue_->Add(std::string(key));
}

void DenseAllocator::Flush(std::vector<std::string> keys) {
  std::vector<Part> parts;
  for (const std::string& key : keys) {
    std::vector<Part> mine = TakeWaiting(key);
    for (Part& p : mine) parts.push_back(std::move(p));
  }
  if (shutting_down_.load(std::memory_order_acquire)) {
    for (Part& p : parts) Answer(p, MakeError(ErrorCode::kShuttingDown, "shutting down"));
  } else {
    // Without a limit on new rows, rows are created in the same transaction.
    Reserve(parts, /*create=*/!auto_create_limit_);
  }
  for (const std::string& key : keys) Requeue(key);
}

std::vector<DenseAllocator::Part> DenseAllocator::TakeWaiting(const std::string& key) {
  std::vector<Waiting> waiting;
  {
    MutexLock lock(mu_);
    waiting.swap(keys_[key].waiting);
  }
  // In arrival order: each run of requests without a token is one store
  // request of their total; each request with a token is one of its own.
  std::vector<Part> parts;
  for (Waiting& w : waiting) {
    if (w.token.empty() && !parts.empty() && parts.back().token.empty()) {
      parts.back().total += w.count;
      parts.back().waiters.push_back(std::move(w));
      continue;
    }
    Part part{key, {}, w.count, w.token};
    part.waiters.push_back(std::move(w));
    parts.push_back(std::move(part));
  }
  return parts;
}

void DenseAllocator::Reserve(std::vector<Part>& parts, bool create) {
  std::vector<ReserveRequest> requests;
  std::vector<size_t> part_of;  // requests[i] serves parts[part_of[i]]
  for (size_t i = 0; i < parts.size(); ++i) {
    Part& p = parts[i];
    ReserveRequest r;
    r.key = p.key;
    r.step = p.total;
    r.token = p.token;
    r.stamp_time = true;  // the key's allocation time (GetAllocTimes), in the same commit
    if (options_.gate) {
      const ShardGrant grant = options_.gate->Check(p.key);
      if (!grant.serving()) {
        Answer(p, MakeError(ErrorCode::kWrongOwner, "this instance does not hold the key's shard"));
        continue;
      }
      r.fence = ShardFence{grant.shard, options_.gate->instance(), grant.epoch};
    }
    const AutoKeyRule* rule = rules_.Match(p.key);
    if (create && rule && rule->mode == KeyMode::kDense) {
      r.create_step = rule->step;
      r.create_description = kAutoCreatedDescription;
    }
    requests.push_back(std::move(r));
    part_of.push_back(i);
  }
  if (requests.empty()) return;
  transactions_.fetch_add(1, std::memory_order_relaxed);
  std::vector<size_t> to_create;  // parts whose rows are created, then reserved again
  std::unordered_map<std::string_view, bool> may_create;  // per new key: within the rate?
  store_.ReserveEach(requests, [&](size_t i, Result<ReservedSegment> range) {
    Part& p = parts[part_of[i]];
    if (!create && !range && range.error().code == ErrorCode::kUnknownKey && IsDense(p.key)) {
      auto [it, first] = may_create.try_emplace(p.key, false);
      if (first) it->second = auto_create_limit_->TryTake(p.waiters.front().requester, clock_.Now());
      if (it->second) {
        to_create.push_back(part_of[i]);
        return;
      }
      range = MakeError(ErrorCode::kResourceExhausted, "too many new keys; try again later");
    }
    if (!range && range.error().code == ErrorCode::kNotServing && requests[i].fence) {
      options_.gate->Fenced(requests[i].fence->shard, requests[i].fence->epoch);
      range = MakeError(ErrorCode::kWrongOwner, "this instance no longer holds the key's shard");
    }
    Answer(p, std::move(range));
  });
  if (to_create.empty()) return;
  std::vector<Part> again;
  for (size_t i : to_create) again.push_back(std::move(parts[i]));
  Reserve(again, /*create=*/true);
}

void DenseAllocator::Answer(Part& part, Result<ReservedSegment> range) {
  waiting_now_.fetch_sub(static_cast<int64_t>(part.waiters.size()), std::memory_order_relaxed);
  if (!range) {
    failures_.fetch_add(static_cast<int64_t>(part.waiters.size()), std::memory_order_relaxed);
    for (Waiting& w : part.waiters) w.done(range.error());
    return;
  }
  if (range->last - range->first + 1 != part.total) {
    const Error wrong =
        MakeError(ErrorCode::kInternal, "the store answered a block of another size");
    failures_.fetch_add(static_cast<int64_t>(part.waiters.size()), std::memory_order_relaxed);
    for (Waiting& w : part.waiters) w.done(wrong);
    return;
  }
  if (range->replayed) {
    replayed_.fetch_add(1, std::memory_order_relaxed);
  } else if (prometheus::Counter* c = issued_.For(part.key, rules_.Match(part.key))) {
    c->Increment(static_cast<double>(part.total));
  }
  requests_.fetch_add(static_cast<int64_t>(part.waiters.size()), std::memory_order_relaxed);
  int64_t next = range->first;
  for (Waiting& w : part.waiters) {
    IdBatch batch;
    batch.ranges.push_back(IdRange{next, next + w.count - 1});
    next += w.count;
    w.done(std::move(batch));
  }
}

void DenseAllocator::Requeue(const std::string& key) {
  {
    MutexLock lock(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    if (it->second.waiting.empty()) {
      keys_.erase(it);
      return;
    }
  }
  (void)queue_->Add(key);
}

void DenseAllocator::FailWaiting(const std::string& key, const Error& error) {
  std::vector<Waiting> waiting;
  {
    MutexLock lock(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return;
    waiting.swap(it->second.waiting);
  }
  waiting_now_.fetch_sub(static_cast<int64_t>(waiting.size()), std::memory_order_relaxed);
  for (Waiting& w : waiting) w.done(error);
}

void DenseAllocator::PruneTokens(std::chrono::milliseconds retention,
                                 std::function<void(Result<int64_t>)> done) {
  db_.Post([this, retention, done = std::move(done)] {
    Result<int64_t> pruned = store_.PruneBlockTokens(UnixMillisNow() - retention.count());
    if (done) done(std::move(pruned));
  });
}

void DenseAllocator::Shutdown() {
  shutting_down_.store(true, std::memory_order_release);
  std::vector<std::string> keys;
  {
    MutexLock lock(mu_);
    for (const auto& [key, q] : keys_) keys.push_back(key);
  }
  for (const std::string& key : keys) {
    FailWaiting(key, MakeError(ErrorCode::kShuttingDown, "shutting down"));
  }
}

DenseStats DenseAllocator::stats() const {
  DenseStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.transactions = transactions_.load(std::memory_order_relaxed);
  s.replayed = replayed_.load(std::memory_order_relaxed);
  s.failures = failures_.load(std::memory_order_relaxed);
  s.waiting_now = waiting_now_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace seqd
