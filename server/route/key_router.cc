#include "server/route/key_router.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "common/request_checks.h"
#include "server/cluster/cluster_metrics.h"
#include "server/cluster/cluster_node.h"
#include "server/core/key_rules.h"
#include "server/route/peer_clients.h"
#include "server/route/push_relay.h"

namespace seqd {
namespace {

// How long a request waits before looking for the key's owner again.
constexpr auto kRetryInterval = std::chrono::milliseconds(10);

bool Moved(const Error& e) { return e.code == ErrorCode::kWrongOwner; }

}  // namespace

KeyRouter::KeyRouter(SegmentAllocator& ids, MessageService& messages, DenseAllocator* dense)
    : ids_(ids), messages_(messages), dense_(dense) {}

KeyRouter::KeyRouter(SegmentAllocator& ids, MessageService& messages, ClusterNode& cluster,
                     PeerClients& peers, PushRelay& relay, Clock& clock, ClusterMetrics* metrics,
                     DenseAllocator* dense)
    : ids_(ids),
      messages_(messages),
      cluster_(&cluster),
      peers_(&peers),
      relay_(&relay),
      clock_(&clock),
      metrics_(metrics),
      dense_(dense) {}

int64_t KeyRouter::max_count() const {
  return std::max(ids_.options().max_count, dense_ ? dense_->options().max_count : 0);
}

int64_t KeyRouter::common_max_count() const {
  const int64_t segment = ids_.options().max_count;
  return dense_ ? std::min(segment, dense_->options().max_count) : segment;
}

std::shared_ptr<KeyRouter::Attempt> KeyRouter::NewAttempt(std::string key, Hop hop) {
  auto a = std::make_shared<Attempt>();
  a->key = std::move(key);
  a->hop = hop;
  a->deadline = clock_->Now() + ids_.options().wait_deadline;
  return a;
}

namespace {

// A token on a key that no dense auto-create rule makes: the key may be a
// segment key or no key at all; either way only a dense key takes a token.
constexpr std::string_view kTokenNeedsDenseKey =
    "a token is only for dense keys, the keys a dense auto_keys rule makes "
    "(docs/dense-keys.md)";

}  // namespace

void KeyRouter::Take(const TakeRequest& request, TakeCallback done) {
  // Bad requests are answered here, never served or forwarded.
  const bool dense = IsDense(request.key);
  if (Status s = CheckTake(request, dense); !s) return done(s.error());
  // A dense key's blocks are contiguous whichever op asked.
  const bool contiguous = request.contiguous || dense;
  if (!cluster_) {
    return TakeHere(request.key, request.count, std::move(done), request.requester, request.token,
                    contiguous, dense);
  }
  TakeRequest routed = request;
  routed.contiguous = contiguous;
  TakeRouted(routed, std::move(done), dense);
}

Status KeyRouter::CheckTake(const TakeRequest& request, bool dense) const {
  const int64_t max = dense ? dense_->options().max_count : ids_.options().max_count;
  if (Status s = CheckCount(request.count, max); !s) return s;
  if (Status s = ValidateClientKey(request.key); !s) return s;
  if (request.token.empty()) return OkStatus();
  if (Status s = DenseAllocator::ValidateToken(request.token); !s) return s;
  if (!dense) return MakeError(ErrorCode::kInvalidArgument, std::string(kTokenNeedsDenseKey));
  return OkStatus();
}

void KeyRouter::TakeHere(std::string_view key, int64_t count, TakeCallback done,
                         std::string_view requester, std::string_view token, bool contiguous,
                         bool dense) {
  if (dense) return dense_->Take(key, count, token, std::move(done), requester);
  ids_.Take(key, count, std::move(done), requester, contiguous);
}

void KeyRouter::TakeRouted(const TakeRequest& request, TakeCallback done, bool dense) {
  auto a = NewAttempt(std::string(request.key), request.hop);
  auto shared_done = std::make_shared<TakeCallback>(std::move(done));
  const int64_t count = request.count;
  const bool contiguous = request.contiguous;
  // The Attempt's calls capture what they answer with, never the Attempt
  // (no cycle); Route()'s continuation holds it while a call is pending.
  a->local = [this, k = a->key, count, shared_done, who = std::string(request.requester),
              once = std::string(request.token), contiguous, dense](std::function<void(bool)> next) {
    auto answer = [shared_done, next = std::move(next)](Result<IdBatch> r) {
      if (!r && Moved(r.error())) return next(true);
      (*shared_done)(std::move(r));
      next(false);
    };
    TakeHere(k, count, std::move(answer), who, once, contiguous, dense);
  };
  a->forward = [this, k = a->key, count, shared_done, who = std::string(request.requester),
                once = std::string(request.token),
                contiguous](const std::string& address, std::function<void(bool)> next) {
    auto answer = [shared_done, next = std::move(next)](Result<IdBatch> r) {
      if (!r && Moved(r.error())) return next(true);
      (*shared_done)(std::move(r));
      next(false);
    };
    if (contiguous) return peers_->NextBlock(address, k, count, who, once, std::move(answer));
    peers_->NextIds(address, k, count, who, std::move(answer));
  };
  a->fail = [shared_done](Error e) { (*shared_done)(std::move(e)); };
  Route(std::move(a));
}

void KeyRouter::Send(SendRequest request, Hop hop, MessageService::Callback<AppendOutcome> done) {
  // The message service checks the fields (here, or at the owner): the
  // conversation id routes by its bytes, whatever they are.
  if (!cluster_) return messages_.Send(std::move(request), std::move(done));
  auto a = NewAttempt(request.conv_id, hop);
  auto shared_done = std::make_shared<MessageService::Callback<AppendOutcome>>(std::move(done));
  auto req = std::make_shared<const SendRequest>(std::move(request));
  a->local = [this, req, shared_done](std::function<void(bool)> next) {
    messages_.Send(*req, [shared_done, next = std::move(next)](Result<AppendOutcome> r) {
      if (!r && Moved(r.error())) return next(true);
      (*shared_done)(std::move(r));
      next(false);
    });
  };
  a->forward = [this, req, shared_done](const std::string& address,
                                        std::function<void(bool)> next) {
    peers_->Send(address, *req, [shared_done, next = std::move(next)](Result<AppendOutcome> r) {
      if (!r && Moved(r.error())) return next(true);
      (*shared_done)(std::move(r));
      next(false);
    });
  };
  a->fail = [shared_done](Error e) { (*shared_done)(std::move(e)); };
  Route(std::move(a));
}

namespace {

// A local subscription and the relay's hold, released together.
class RelayedSubscription final : public Subscription {
 public:
  RelayedSubscription(std::unique_ptr<Subscription> local, std::unique_ptr<Subscription> relay)
      : relay_(std::move(relay)), local_(std::move(local)) {}

 private:
  std::unique_ptr<Subscription> relay_;
  std::unique_ptr<Subscription> local_;
};

}  // namespace

Result<std::unique_ptr<Subscription>> KeyRouter::Subscribe(const std::string& conv, Hop hop,
                                                           MessageListener listener) {
  Result<std::unique_ptr<Subscription>> local = messages_.Subscribe({conv}, std::move(listener));
  if (!local || !relay_ || hop == Hop::kNoForward) return local;
  return std::unique_ptr<Subscription>(
      std::make_unique<RelayedSubscription>(std::move(local).value(), relay_->Want(conv)));
}

void KeyRouter::Route(std::shared_ptr<Attempt> a) {
  if (cluster_->Check(a->key).serving()) {
    // Lost while it waited here (kWrongOwner): route it again.
    return a->local([this, a](bool again) {
      if (again) Retry(a);
    });
  }
  const ShardRoute route = cluster_->Route(a->key);
  const bool elsewhere = !route.mine && route.owner_live && !route.advertise.empty();
  if (elsewhere && a->hop == Hop::kNoForward) {
    // A peer (or a client routing by its map) thinks we own it: one of the
    // maps is stale, perhaps ours (a handoff whose nudge did not reach us).
    cluster_->RefreshSoon();
    if (metrics_) metrics_->WrongOwner();
    return a->fail(MakeError(ErrorCode::kWrongOwner, "another instance owns this key"));
  }
  if (elsewhere) {
    return a->forward(route.advertise, [this, a](bool again) {
      if (metrics_) metrics_->Forwarded(!again);
      if (!again) return;
      cluster_->RefreshSoon();  // our map named an owner that is not (or did not answer)
      Retry(a);
    });
  }
  // A shard released to us (a handoff) is taken at our next round: have it
  // now, in case the releaser's nudge was lost. (A dead owner's shard is
  // taken when its wait ends; the round is scheduled for then already.)
  if (route.released && route.mine) cluster_->RefreshSoon();
  Retry(std::move(a));  // no owner yet, or it is us and the lease is not granted yet
}

void KeyRouter::Retry(std::shared_ptr<Attempt> a) {
  const Clock::TimePoint next = clock_->Now() + kRetryInterval;
  if (next >= a->deadline) {
    return a->fail(
        MakeError(ErrorCode::kStoreUnavailable, "no instance serves this key's shard now; retry"));
  }
  if (metrics_ && !a->waited) metrics_->WaitedForOwner();
  a->waited = true;
  clock_->RunAt(next, [this, a]() mutable { Route(std::move(a)); });
}

}  // namespace seqd
