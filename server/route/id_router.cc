#include "server/route/id_router.h"

#include <string>

#include "server/cluster/cluster_metrics.h"
#include "server/cluster/cluster_node.h"
#include "server/core/key_rules.h"
#include "server/route/peer_clients.h"
#include "server/service/request_checks.h"

namespace seqd {
namespace {

// How long a request waits before looking for the key's owner again.
constexpr auto kRetryInterval = std::chrono::milliseconds(10);

}  // namespace

struct IdRouter::Attempt {
  std::string key;
  int64_t count = 0;
  Hop hop = Hop::kMayForward;
  Clock::TimePoint deadline;
  TakeCallback done;
  bool waited = false;  // counted once in owner waits
};

IdRouter::IdRouter(SegmentAllocator& local) : local_(local) {}

IdRouter::IdRouter(SegmentAllocator& local, ClusterNode& cluster, PeerClients& peers, Clock& clock,
                   ClusterMetrics* metrics)
    : local_(local), cluster_(&cluster), peers_(&peers), clock_(&clock), metrics_(metrics) {}

void IdRouter::Take(std::string_view key, int64_t count, Hop hop, TakeCallback done) {
  if (!cluster_) return local_.Take(key, count, std::move(done));
  // Bad requests are answered here, never forwarded.
  if (Status s = CheckCount(count, local_.options().max_count); !s) return done(s.error());
  if (Status s = KeyRules::Validate(key); !s) return done(s.error());
  auto a = std::make_shared<Attempt>();
  a->key = std::string(key);
  a->count = count;
  a->hop = hop;
  a->deadline = clock_->Now() + local_.options().wait_deadline;
  a->done = std::move(done);
  Try(std::move(a));
}

void IdRouter::Try(std::shared_ptr<Attempt> a) {
  if (cluster_->Check(a->key).serving()) {
    return local_.Take(a->key, a->count, [this, a](Result<IdBatch> r) mutable {
      // Lost while it waited for a reservation: route it again.
      if (!r && r.error().code == ErrorCode::kWrongOwner) return Retry(std::move(a));
      a->done(std::move(r));
    });
  }
  const ShardRoute route = cluster_->Route(a->key);
  const bool elsewhere = !route.mine && route.owner_live && !route.advertise.empty();
  if (elsewhere && a->hop == Hop::kNoForward) {
    if (metrics_) metrics_->WrongOwner();
    return a->done(MakeError(ErrorCode::kWrongOwner, "another instance owns this key"));
  }
  if (elsewhere) {
    return peers_->NextIds(route.advertise, a->key, a->count, [this, a](Result<IdBatch> r) mutable {
      const bool moved = !r && r.error().code == ErrorCode::kWrongOwner;
      if (metrics_) metrics_->Forwarded(!moved);
      if (moved) return Retry(std::move(a));
      a->done(std::move(r));
    });
  }
  Retry(std::move(a));  // no owner yet, or it is us and the lease is not granted yet
}

void IdRouter::Retry(std::shared_ptr<Attempt> a) {
  const Clock::TimePoint next = clock_->Now() + kRetryInterval;
  if (next >= a->deadline) {
    return a->done(
        MakeError(ErrorCode::kStoreUnavailable, "no instance serves this key's shard now; retry"));
  }
  if (metrics_ && !a->waited) metrics_->WaitedForOwner();
  a->waited = true;
  clock_->RunAt(next, [this, a]() mutable { Try(std::move(a)); });
}

}  // namespace seqd
