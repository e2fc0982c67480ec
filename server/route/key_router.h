// Where every listener sends a keyed write: a request for IDs (Take) or a
// message send (Send). Services::router.
//
// Outside cluster mode: straight to the local SegmentAllocator or
// MessageService. In cluster mode (docs/cluster.md), by the key's shard
// (a segment key, or a conversation id):
//  - held by this instance (ShardGate::Check): served here;
//  - owned by another live instance: forwarded once to it over the binary
//    protocol (PeerClients, NO_FORWARD), its answer passed back unchanged;
//    a request that itself came with NO_FORWARD is answered WRONG_OWNER;
//  - no owner yet (a takeover in progress), or the owner did not answer or
//    said it is not the owner (the map moved), or the shard was lost while
//    the request waited here: tried again every few milliseconds until the
//    wait deadline, then kStoreUnavailable. Re-sending a message is safe
//    (the store detects the re-send), and so is asking again for IDs (those
//    of a lost answer are never handed out).
// Reads (pulls, member calls) need no routing: every instance reads the
// committed rows.
//
// Thread safety: Take() and Send() are safe from any thread and never
// block; `done` runs exactly once, on a network, database, writer or timer
// thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/clock.h"
#include "server/core/dense_allocator.h"
#include "server/core/segment_allocator.h"
#include "server/msg/message_service.h"
#include "server/service/id_api.h"

namespace seqd {

class ClusterNode;
class ClusterMetrics;
class PeerClients;
class PushRelay;

class KeyRouter final : public IdApi {
 public:
  // Outside cluster mode. All must outlive the router; `dense` is optional
  // (without it every key is a segment key).
  KeyRouter(SegmentAllocator& ids, MessageService& messages, DenseAllocator* dense = nullptr);
  // Cluster mode. Every argument but `metrics` and `dense` (optional) must
  // outlive the router.
  KeyRouter(SegmentAllocator& ids, MessageService& messages, ClusterNode& cluster,
            PeerClients& peers, PushRelay& relay, Clock& clock, ClusterMetrics* metrics,
            DenseAllocator* dense = nullptr);

  // IDs of `request.key`: a dense key's (DenseAllocator::IsDense) from the
  // dense allocator, always one contiguous block; any other's from the
  // segment allocator. The one place a take is checked: count (within the
  // key's allocator's max_count), key (ValidateClientKey) and token
  // (DenseAllocator::ValidateToken; only a dense key takes one). The
  // allocators serve only what passed here.
  void Take(const TakeRequest& request, TakeCallback done) override;
  // The largest count Take accepts for some key, and for every key.
  int64_t max_count() const override;
  int64_t common_max_count() const override;
  // MAX_IDS (SegmentAllocator::MaxIds), answered by each key's owner: in
  // cluster mode the keys are split by owner, each part served here or
  // forwarded (a part that moved is routed again), the answers put back in
  // the order asked. With kNoForward, any key not held here fails the
  // whole request with kWrongOwner. key_router_batch.cc.
  void MaxIds(std::vector<std::string> keys, Hop hop, ValuesCallback done) override;
  // MAX_IDS_TIMES: MaxIds, then each key's allocation time read from the
  // store here (SegmentAllocator::GetAllocTimes; -1: the key has no row).
  // The time is read after the max, so it is at least as recent.
  void MaxIdsWithTimes(std::vector<std::string> keys, Hop hop, MaxIdsTimesCallback done) override;
  // USER_SEQS and SET_USER_SEQS (SegmentAllocator::GetUserSeqs,
  // SetUserSeqs): rows nothing holds in memory, read and written here on
  // any instance.
  void GetUserSeqs(std::string user, UserSeqField field, std::vector<std::string> convs,
                   ValuesCallback done) override;
  void SetUserSeqs(std::string user, UserSeqField field, bool raise_only,
                   std::vector<UserSeqValue> values, std::function<void(Status)> done) override;
  // GET_MIN_SEQS: a read of committed rows, answered here on any instance.
  void GetMinSeqs(std::vector<std::string> keys, ValuesCallback done) override;
  // SET_MIN_SEQS: a keyed write, split by owner as MaxIds (one fenced
  // transaction per owner); a part fenced out is routed again.
  void SetMinSeqs(std::vector<MinSeqValue> values, Hop hop,
                  std::function<void(Status)> done) override;
  void Send(SendRequest request, Hop hop, MessageService::Callback<AppendOutcome> done);
  // Push of `conv` to `listener`: this process's bus, and in cluster mode
  // (unless `hop` is kNoForward: a peer relaying) also what the
  // conversation's owner publishes, wherever it is (PushRelay).
  Result<std::unique_ptr<Subscription>> Subscribe(const std::string& conv, Hop hop,
                                                  MessageListener listener);
  // True if `key` is served by the dense allocator (a dense rule made it).
  bool IsDense(std::string_view key) const override { return dense_ && dense_->IsDense(key); }
  // The dense allocator's totals (status page); nullopt without one.
  std::optional<DenseStats> dense_stats() const override {
    return dense_ ? std::optional<DenseStats>(dense_->stats()) : std::nullopt;
  }
  // This process's segment buffers (SegmentAllocator::Snapshot).
  std::vector<KeySnapshot> Snapshot() const override { return ids_.Snapshot(); }
  std::vector<KeySnapshot> Snapshot(std::string_view after, size_t limit) const override {
    return ids_.Snapshot(after, limit);
  }
  std::optional<KeySnapshot> SnapshotKey(std::string_view key) const override {
    return ids_.SnapshotKey(key);
  }

 private:
  // One request's journey: `local` serves it here, `forward` at the owner
  // (address given); both report kWrongOwner to have it routed again.
  struct Attempt {
    std::string key;
    Hop hop = Hop::kMayForward;
    Clock::TimePoint deadline;
    bool waited = false;  // counted once in owner waits
    std::function<void(std::function<void(bool again)>)> local;
    std::function<void(const std::string& address, std::function<void(bool again)>)> forward;
    std::function<void(Error)> fail;
  };
  // Count, key and token of a take, or the error to answer.
  Status CheckTake(const TakeRequest& request, bool dense) const;
  // A checked take, in cluster mode: served here or at the key's owner.
  // `dense`: IsDense(request.key).
  void TakeRouted(const TakeRequest& request, TakeCallback done, bool dense);
  // Serves a checked take here: the dense allocator if `dense`
  // (IsDense(key)), else the segment allocator.
  void TakeHere(std::string_view key, int64_t count, TakeCallback done, std::string_view requester,
                std::string_view token, bool contiguous, bool dense);
  // A request over many keys, split by owner (key_router_batch.cc).
  struct BatchJob;
  void RouteParts(std::shared_ptr<BatchJob> job, std::vector<size_t> part);
  void RetryPart(std::shared_ptr<BatchJob> job, std::vector<size_t> part);
  void FinishPart(const std::shared_ptr<BatchJob>& job, std::optional<Error> error);
  void Route(std::shared_ptr<Attempt> a);
  void Retry(std::shared_ptr<Attempt> a);
  std::shared_ptr<Attempt> NewAttempt(std::string key, Hop hop);

  SegmentAllocator& ids_;
  MessageService& messages_;
  ClusterNode* const cluster_ = nullptr;
  PeerClients* const peers_ = nullptr;
  PushRelay* const relay_ = nullptr;
  Clock* const clock_ = nullptr;
  ClusterMetrics* const metrics_ = nullptr;
  DenseAllocator* const dense_ = nullptr;
};

}  // namespace seqd
