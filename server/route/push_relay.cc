#include "server/route/push_relay.h"

#include <vector>

#include "server/base/log.h"
#include "server/cluster/cluster_node.h"
#include "server/route/peer_clients.h"

namespace seqd {

// A local subscriber's hold on a relay.
class PushRelay::Interest final : public Subscription {
 public:
  Interest(PushRelay& relay, std::string conv) : relay_(relay), conv_(std::move(conv)) {}
  ~Interest() override { relay_.Release(conv_); }

 private:
  PushRelay& relay_;
  const std::string conv_;
};

PushRelay::PushRelay(MessageService& messages, const ClusterNode& cluster, PeerClients& peers)
    : messages_(messages), cluster_(cluster), peers_(peers) {}

PushRelay::~PushRelay() {
  MutexLock lock(mu_);
  for (auto& [conv, relay] : relays_) MoveLocked(conv, relay, "");
}

std::unique_ptr<Subscription> PushRelay::Want(const std::string& conv) {
  {
    MutexLock lock(mu_);
    ++relays_[conv].wanted;
  }
  Reconcile();  // subscribe at the owner now, not at the next tick
  return std::make_unique<Interest>(*this, conv);
}

void PushRelay::Release(const std::string& conv) {
  MutexLock lock(mu_);
  auto it = relays_.find(conv);
  if (it == relays_.end() || --it->second.wanted > 0) return;
  MoveLocked(conv, it->second, "");
  relays_.erase(it);
}

size_t PushRelay::relayed() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [conv, relay] : relays_) n += relay.upstream.empty() ? 0 : 1;
  return n;
}

void PushRelay::Reconcile() {
  MutexLock lock(mu_);
  for (auto& [conv, relay] : relays_) {
    const ShardRoute route = cluster_.Route(conv);
    // Ours (our writers publish), or no live owner yet (wait): no relay.
    const std::string want = !route.mine && route.owner_live ? route.advertise : "";
    if (want != relay.upstream) MoveLocked(conv, relay, want);
  }
}

void PushRelay::MoveLocked(const std::string& conv, Relay& relay, const std::string& address) {
  if (!relay.upstream.empty()) peers_.Unsubscribe(relay.upstream, conv);
  relay.upstream = address;
  const uint64_t generation = ++relay.generation;
  if (address.empty()) return;
  MessageService& messages = messages_;
  peers_.Subscribe(
      address, conv, [&messages](const StoredMessage& m) { messages.PublishRelayed(m); },
      // Lost (the peer closed, dropped us, or refused): subscribe again at
      // the next Reconcile, wherever the owner is then.
      [this, conv, generation] {
        MutexLock lock(mu_);
        auto it = relays_.find(conv);
        if (it != relays_.end() && it->second.generation == generation) {
          it->second.upstream.clear();
        }
      });
}

}  // namespace seqd
