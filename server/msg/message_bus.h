// Fan-out of committed messages to subscribers (push).
//
// Ordering: Publish() is called by the one writer that owns a conversation,
// in seq order, so each listener sees a conversation's messages in seq order.
//
// Thread safety: all methods are safe from any thread. Listeners run on the
// publishing thread, under no lock of the bus's shard map, and must not
// block. A Subscription's destructor waits for a running call of its
// listener to return (unless called from inside that listener), so after it
// returns the listener is never called again.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/msg/message_service.h"

namespace seqd {

class MessageBus {
 public:
  MessageBus() = default;
  MessageBus(const MessageBus&) = delete;
  MessageBus& operator=(const MessageBus&) = delete;

  // REQUIRES: the bus outlives the returned subscription.
  std::unique_ptr<Subscription> Subscribe(const std::vector<std::string>& conv_ids,
                                          MessageListener listener) EXCLUDES(mu_);

  // Delivers `message` to every listener of its conversation.
  void Publish(const StoredMessage& message) EXCLUDES(mu_);

  size_t subscriber_count() const EXCLUDES(mu_);

  struct Listener;  // shared by the bus and its Subscription

 private:
  friend class BusSubscription;
  void Remove(const std::vector<std::string>& conv_ids, const std::shared_ptr<Listener>& listener)
      EXCLUDES(mu_);

  mutable Mutex mu_;
  // conv_id -> listeners.
  std::unordered_map<std::string, std::vector<std::shared_ptr<Listener>>> by_conv_ GUARDED_BY(mu_);
};

}  // namespace seqd
