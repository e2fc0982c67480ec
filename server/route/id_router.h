// Where every listener sends a request for IDs (Services::id_router).
//
// Outside cluster mode: straight to the local SegmentAllocator.
// In cluster mode (docs/cluster.md), by the key's shard:
//  - held by this instance (ShardGate::Check): the local allocator;
//  - owned by another live instance: forwarded once to it over the binary
//    protocol (PeerClients, NO_FORWARD), its answer passed back unchanged;
//    a request that itself came with NO_FORWARD is answered WRONG_OWNER;
//  - no owner yet (a takeover in progress), or the owner did not answer or
//    said it is not the owner (the map moved): tried again every few
//    milliseconds until the wait deadline, then kStoreUnavailable.
//
// Thread safety: Take() is safe from any thread and never blocks; `done`
// runs exactly once, on a network, database or timer thread.
#pragma once

#include <memory>
#include <string_view>

#include "server/core/clock.h"
#include "server/core/segment_allocator.h"

namespace seqd {

class ClusterNode;
class ClusterMetrics;
class PeerClients;

// Whether a request may be forwarded to the key's owner.
enum class Hop { kMayForward, kNoForward };

class IdRouter {
 public:
  // Outside cluster mode. `local` must outlive the router.
  explicit IdRouter(SegmentAllocator& local);
  // Cluster mode. Every argument but `metrics` (optional) must outlive the
  // router.
  IdRouter(SegmentAllocator& local, ClusterNode& cluster, PeerClients& peers, Clock& clock,
           ClusterMetrics* metrics);

  void Take(std::string_view key, int64_t count, Hop hop, TakeCallback done);

 private:
  struct Attempt;
  void Try(std::shared_ptr<Attempt> a);
  void Retry(std::shared_ptr<Attempt> a);

  SegmentAllocator& local_;
  ClusterNode* const cluster_ = nullptr;
  PeerClients* const peers_ = nullptr;
  Clock* const clock_ = nullptr;
  ClusterMetrics* const metrics_ = nullptr;
};

}  // namespace seqd
