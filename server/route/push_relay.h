// Cluster mode's push across instances (docs/cluster.md): a subscriber
// connected to any instance receives the messages its conversations'
// owners commit.
//
// Messages are stamped and published only by a conversation's owner. For
// every conversation some local connection subscribed to and whose shard
// is held elsewhere, this instance holds one subscription at the owner
// (over PeerClients, NO_FORWARD) and publishes what arrives into its own
// bus, so local subscribers get it as if it were committed here.
// Reconcile() (every 100 ms) follows the shard map: when a conversation's
// owner changes, the relay moves to the new owner (or stops, once the
// shard is ours: our writers publish it). Around such a move, and after a
// lost peer connection, pushes may skip or repeat messages; subscribers
// fill gaps by pulling, as after any re-subscription (client ReceiveQueue).
//
// Thread safety: every method is safe from any thread. Peer callbacks run
// on the peers' executor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/msg/message_service.h"

namespace seqd {

class ClusterNode;
class PeerClients;

class PushRelay {
 public:
  // All must outlive the relay.
  PushRelay(MessageService& messages, const ClusterNode& cluster, PeerClients& peers);
  ~PushRelay();
  PushRelay(const PushRelay&) = delete;
  PushRelay& operator=(const PushRelay&) = delete;

  // One local subscriber's interest in `conv`; dropping the handle ends it.
  std::unique_ptr<Subscription> Want(const std::string& conv) EXCLUDES(mu_);

  // Moves each relay to its conversation's current owner (see above).
  void Reconcile() EXCLUDES(mu_);

  // Relayed conversations, and how many relays moved or were lost so far.
  size_t relayed() const EXCLUDES(mu_);

 private:
  struct Relay {
    int wanted = 0;           // local subscriber handles
    std::string upstream;     // the owner's address we subscribed at; "" for none
    uint64_t generation = 0;  // bumped on every move: stale callbacks are ignored
  };
  class Interest;
  void Release(const std::string& conv) EXCLUDES(mu_);
  // Subscribes at `address` (or nowhere for "").
  void MoveLocked(const std::string& conv, Relay& relay, const std::string& address) REQUIRES(mu_);

  MessageService& messages_;
  const ClusterNode& cluster_;
  PeerClients& peers_;
  mutable Mutex mu_;
  std::map<std::string, Relay> relays_ GUARDED_BY(mu_);
};

}  // namespace seqd
