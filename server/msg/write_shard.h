// One writer thread of the message store: stamps and stores the sends of
// the conversations hashed to it, by group commit.
//
// Each loop takes every queued send (up to max_batch messages and
// kMaxBatchBytes of payload), gives them server message ids and a send
// time, stores them in ONE MessageStore::Append transaction, then answers
// each send (a send whose client message id holds another message:
// kMessageIdConflict) and publishes the new messages to the bus. Because this thread
// is the only writer of its conversations in this process, the max-seq
// cache it keeps is exact unless another process writes the same
// conversation, which the store detects and repairs.
//
// Thread safety: Enqueue() and Stop() are safe from any thread; everything
// else runs on the shard's own thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/msg/message_service.h"

namespace seqd {

class MessageBus;
class ShardGate;
class Metrics;
class ServerMsgIdSource;

inline constexpr size_t kMaxBatchBytes = 4 << 20;

class WriteShard {
 public:
  struct Pending {
    AppendRequest request;
    MessageService::Callback<AppendOutcome> done;
  };

  // All references must outlive the shard. Starts the thread.
  // `metrics` is optional.
  // `gate` (cluster mode) is optional too: with one, each batch keeps only
  // the sends whose shard is held now and is stored fenced.
  WriteShard(MessageStore& store, ServerMsgIdSource& ids, MessageBus& bus, size_t max_batch,
             size_t max_queued, size_t cache_entries, Metrics* metrics = nullptr,
             ShardGate* gate = nullptr);
  ~WriteShard();  // Stop()
  WriteShard(const WriteShard&) = delete;
  WriteShard& operator=(const WriteShard&) = delete;

  // Queues a send. When the queue is full or the shard is stopping, `done`
  // is called at once (on this thread) with kStoreUnavailable or
  // kShuttingDown.
  void Enqueue(Pending pending) EXCLUDES(mu_);

  // Finishes the transaction in progress, fails the queued sends with
  // kShuttingDown, joins the thread. Idempotent.
  void Stop() EXCLUDES(mu_);

  // Sends waiting for this shard's writer.
  size_t queued() const EXCLUDES(mu_);

 private:
  void Run() EXCLUDES(mu_);
  void Commit(std::vector<Pending>& batch) EXCLUDES(mu_);
  // Append with a short retry for transient failures (lock conflicts).
  Result<std::vector<AppendOutcome>> AppendWithRetry(const std::vector<AppendRequest>& requests,
                                                     AppendFencing* fencing) EXCLUDES(mu_);
  // Counts a committed batch's outcomes: stored, duplicates, conflicts.
  // REQUIRES: metrics_.
  void CountOutcomes(const std::vector<AppendOutcome>& outcomes, double seconds);
  // Cluster mode: answers kWrongOwner to the sends whose shard is not held
  // now and returns the fences of the rest.
  AppendFencing KeepHeld(std::vector<Pending>& batch);

  ShardGate* const gate_;  // null outside cluster mode
  MessageStore& store_;
  ServerMsgIdSource& ids_;
  MessageBus& bus_;
  const size_t max_batch_;
  const size_t max_queued_;
  const size_t cache_entries_;
  Metrics* const metrics_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;

  MaxSeqCache max_seq_cache_;  // the shard thread only
  std::thread thread_;         // started last
};

}  // namespace seqd
