#include "server/msg/message_bus.h"

#include <algorithm>
#include <cassert>
#include <thread>

namespace seqd {

// A listener and the lock that lets its Subscription wait out a running call.
struct MessageBus::Listener {
  explicit Listener(MessageListener fn) : fn(std::move(fn)) {}
  Mutex call_mu;  // held while `fn` runs
  bool active GUARDED_BY(call_mu) = true;
  MessageListener fn;
};

class BusSubscription final : public Subscription {
 public:
  BusSubscription(MessageBus& bus, std::vector<std::string> conv_ids,
                  std::shared_ptr<MessageBus::Listener> listener)
      : bus_(bus), conv_ids_(std::move(conv_ids)), listener_(std::move(listener)) {}

  ~BusSubscription() override {
    bus_.Remove(conv_ids_, listener_);
    // From inside the listener itself, the call lock is already ours.
    if (tls_calling_ == listener_.get()) {
      AssertCalling(*listener_);
      listener_->active = false;
      return;
    }
    MutexLock lock(listener_->call_mu);
    listener_->active = false;
  }

  // The caller runs inside `listener`'s call, so Publish() holds its
  // call_mu on this thread (further up the stack).
  static void AssertCalling([[maybe_unused]] MessageBus::Listener& listener)
      ASSERT_CAPABILITY(listener.call_mu) {
    assert(tls_calling_ == &listener);
  }

  static thread_local MessageBus::Listener* tls_calling_;

 private:
  MessageBus& bus_;
  const std::vector<std::string> conv_ids_;
  const std::shared_ptr<MessageBus::Listener> listener_;
};

thread_local MessageBus::Listener* BusSubscription::tls_calling_ = nullptr;

std::unique_ptr<Subscription> MessageBus::Subscribe(const std::vector<std::string>& conv_ids,
                                                    MessageListener listener) {
  auto shared = std::make_shared<Listener>(std::move(listener));
  std::vector<std::string> unique = conv_ids;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  {
    MutexLock lock(mu_);
    for (const std::string& conv : unique) by_conv_[conv].push_back(shared);
  }
  return std::make_unique<BusSubscription>(*this, std::move(unique), std::move(shared));
}

void MessageBus::Remove(const std::vector<std::string>& conv_ids,
                        const std::shared_ptr<Listener>& listener) {
  MutexLock lock(mu_);
  for (const std::string& conv : conv_ids) {
    auto it = by_conv_.find(conv);
    if (it == by_conv_.end()) continue;
    std::erase(it->second, listener);
    if (it->second.empty()) by_conv_.erase(it);
  }
}

void MessageBus::Publish(const StoredMessage& message) {
  std::vector<std::shared_ptr<Listener>> targets;
  {
    MutexLock lock(mu_);
    auto it = by_conv_.find(message.conv_id);
    if (it == by_conv_.end()) return;
    targets = it->second;
  }
  for (const std::shared_ptr<Listener>& listener : targets) {
    MutexLock call(listener->call_mu);
    if (!listener->active) continue;
    BusSubscription::tls_calling_ = listener.get();
    listener->fn(message);
    BusSubscription::tls_calling_ = nullptr;
  }
}

size_t MessageBus::subscriber_count() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [conv, listeners] : by_conv_) n += listeners.size();
  return n;
}

}  // namespace seqd
