#include "server/msg/write_shard.h"

#include <chrono>
#include <map>

#include "server/base/log.h"
#include "server/base/log_format.h"
#include "server/core/shard_gate.h"
#include "server/metrics/metrics.h"
#include "server/msg/message_bus.h"
#include "server/msg/server_msg_id_source.h"

namespace seqd {

namespace {

constexpr int kAppendAttempts = 3;
constexpr std::chrono::milliseconds kRetryPause{20};

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What a send whose client message id holds another message is told: the
// seq of that message (the sender's own), and what to do.
Error ConflictError(const AppendOutcome& stored) {
  return MakeError(ErrorCode::kMessageIdConflict,
                   "client_msg_id is already used by another message of this sender (seq " +
                       std::to_string(stored.seq) +
                       ") with another content_type or payload; a re-send must carry the same "
                       "content, a new message needs a new client_msg_id");
}

}  // namespace

WriteShard::WriteShard(MessageStore& store, ServerMsgIdSource& ids, MessageBus& bus,
                       size_t max_batch, size_t max_queued, size_t cache_entries, Metrics* metrics,
                       ShardGate* gate)
    : gate_(gate),
      store_(store),
      ids_(ids),
      bus_(bus),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      max_queued_(max_queued < 1 ? 1 : max_queued),
      cache_entries_(cache_entries),
      metrics_(metrics),
      thread_([this] { Run(); }) {}

WriteShard::~WriteShard() { Stop(); }

void WriteShard::Enqueue(Pending pending) {
  {
    MutexLock lock(mu_);
    if (!stopping_ && queue_.size() < max_queued_) {
      queue_.push_back(std::move(pending));
      lock.Unlock();
      cv_.notify_one();
      return;
    }
    if (!stopping_) {
      lock.Unlock();
      if (metrics_) metrics_->MessageSendError(ErrorCode::kStoreUnavailable);
      SEQD_LOG(kWarn) << "message store: send queue full (" << max_queued_
                      << "), answered store_unavailable conv=" << LogValue(pending.request.conv_id);
      pending.done(MakeError(ErrorCode::kStoreUnavailable,
                             "too many messages waiting to be stored; retry later"));
      return;
    }
  }
  if (metrics_) metrics_->MessageSendError(ErrorCode::kShuttingDown);
  pending.done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
}

size_t WriteShard::queued() const {
  MutexLock lock(mu_);
  return queue_.size();
}

void WriteShard::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void WriteShard::Run() {
  std::vector<Pending> batch;
  for (;;) {
    {
      MutexLock lock(mu_);
      cv_.wait(lock.native(), [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      size_t bytes = 0;
      while (!queue_.empty() && batch.size() < max_batch_) {
        const size_t size = queue_.front().request.payload.size();
        if (!batch.empty() && bytes + size > kMaxBatchBytes) break;
        bytes += size;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    Commit(batch);
    batch.clear();
  }
  std::deque<Pending> left;
  {
    MutexLock lock(mu_);
    left.swap(queue_);
  }
  if (metrics_ && !left.empty()) {
    metrics_->MessageSendError(ErrorCode::kShuttingDown, static_cast<int64_t>(left.size()));
  }
  for (Pending& p : left) p.done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
}

AppendFencing WriteShard::KeepHeld(std::vector<Pending>& batch) {
  AppendFencing fencing;
  std::map<uint32_t, int64_t> epochs;
  size_t kept = 0;
  for (Pending& p : batch) {
    const ShardGrant g = gate_->Check(p.request.conv_id);
    if (!g.serving()) {
      p.done(MakeError(ErrorCode::kWrongOwner, "the conversation's shard is not held here"));
      continue;
    }
    epochs.emplace(g.shard, g.epoch);  // a later epoch in one batch: the first one's fence fails
    if (&batch[kept] != &p) batch[kept] = std::move(p);
    ++kept;
  }
  batch.resize(kept);
  for (const auto& [shard, epoch] : epochs) {
    fencing.fences.push_back(ShardFence{shard, gate_->instance(), epoch});
  }
  return fencing;
}

void WriteShard::Commit(std::vector<Pending>& batch) {
  std::optional<AppendFencing> fencing;
  if (gate_) {
    fencing = KeepHeld(batch);
    if (batch.empty()) return;
  }
  std::vector<int64_t> ids;
  ids.reserve(batch.size());
  if (Status taken = ids_.Take(batch.size(), ids); !taken) {
    SEQD_LOG(kWarn) << "message store: no server message ids: " << taken.error().message;
    if (metrics_) {
      metrics_->MessageSendError(taken.error().code, static_cast<int64_t>(batch.size()));
    }
    for (Pending& p : batch) p.done(taken.error());
    return;
  }
  const int64_t now = NowMillis();
  std::vector<AppendRequest> requests;
  requests.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    AppendRequest& r = requests.emplace_back(std::move(batch[i].request));
    r.server_msg_id = ids[i];
    r.send_time_ms = now;
  }
  if (max_seq_cache_.size() > cache_entries_) max_seq_cache_.clear();

  const auto started = std::chrono::steady_clock::now();
  Result<std::vector<AppendOutcome>> outcomes =
      AppendWithRetry(requests, fencing ? &*fencing : nullptr);
  if (!outcomes && fencing && fencing->refused) {
    // Fenced out: nothing was stored. Stop serving the shard; every send of
    // the batch is routed again (re-sending is safe).
    for (const ShardFence& f : fencing->fences) {
      if (f.shard == *fencing->refused) gate_->Fenced(f.shard, f.epoch);
    }
    SEQD_LOG(kInfo) << "message store: batch of " << requests.size() << " fenced out (shard "
                    << *fencing->refused << " moved)";
    for (Pending& p : batch) {
      p.done(MakeError(ErrorCode::kWrongOwner, "the conversation's shard moved"));
    }
    return;
  }
  if (!outcomes) {
    SEQD_LOG(kWarn) << "message store: a batch of " << requests.size()
                    << " messages failed code=" << ErrorCodeName(outcomes.error().code) << ": "
                    << outcomes.error().message;
    if (metrics_) {
      metrics_->MessageSendError(outcomes.error().code, static_cast<int64_t>(batch.size()));
    }
    for (Pending& p : batch) p.done(outcomes.error());
    return;
  }
  if (metrics_) CountOutcomes(*outcomes, Metrics::Since(started));
  for (size_t i = 0; i < batch.size(); ++i) {
    const AppendOutcome& o = (*outcomes)[i];
    if (o.conflict) {
      batch[i].done(ConflictError(o));
    } else {
      batch[i].done(o);
    }
  }

  if (bus_.subscriber_count() == 0) return;
  for (size_t i = 0; i < requests.size(); ++i) {
    const AppendOutcome& o = (*outcomes)[i];
    if (o.duplicate) continue;
    AppendRequest& r = requests[i];
    StoredMessage m;
    m.conv_id = std::move(r.conv_id);
    m.seq = o.seq;
    m.server_msg_id = o.server_msg_id;
    m.sender_id = std::move(r.sender_id);
    m.client_msg_id = std::move(r.client_msg_id);
    m.content_type = r.content_type;
    m.payload = std::move(r.payload);
    m.send_time_ms = o.send_time_ms;
    bus_.Publish(m);
  }
}

void WriteShard::CountOutcomes(const std::vector<AppendOutcome>& outcomes, double seconds) {
  int64_t duplicates = 0;
  int64_t conflicts = 0;
  for (const AppendOutcome& o : outcomes) {
    conflicts += o.conflict ? 1 : 0;
    duplicates += o.duplicate && !o.conflict ? 1 : 0;
  }
  const auto stored = static_cast<int64_t>(outcomes.size()) - duplicates - conflicts;
  metrics_->MessageBatch(outcomes.size(), seconds);
  metrics_->MessageStored(stored);
  if (duplicates > 0) metrics_->MessageDuplicates(duplicates);
  if (conflicts > 0) metrics_->MessageSendError(ErrorCode::kMessageIdConflict, conflicts);
}

Result<std::vector<AppendOutcome>> WriteShard::AppendWithRetry(
    const std::vector<AppendRequest>& requests, AppendFencing* fencing) {
  for (int attempt = 1;; ++attempt) {
    Result<std::vector<AppendOutcome>> r =
        fencing ? store_.AppendFenced(requests, max_seq_cache_, *fencing)
                : store_.Append(requests, max_seq_cache_);
    if (r || r.error().code != ErrorCode::kStoreUnavailable || attempt == kAppendAttempts) {
      return r;
    }
    {
      MutexLock lock(mu_);
      if (stopping_) return r;
    }
    std::this_thread::sleep_for(kRetryPause * attempt);
  }
}

}  // namespace seqd
