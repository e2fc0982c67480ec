// SubscriptionKeeper's raw subscriptions: one per conversation, held by
// the subscriptions that have it, subscribed, unsubscribed, lost and
// subscribed again (subscription_keeper.h).
#include <algorithm>
#include <map>

#include "subscription_keeper.h"

namespace seqd::client::detail {

namespace {

bool Transient(StatusCode code) {
  return code == StatusCode::kTimeout || code == StatusCode::kUnavailable ||
         code == StatusCode::kStoreUnavailable || code == StatusCode::kShuttingDown ||
         code == StatusCode::kWrongOwner || code == StatusCode::kInternal;
}

}  // namespace

void SubscriptionKeeper::Hold(uint64_t sub, const std::string& conv) {
  raw_[conv].subs.insert(sub);
}

void SubscriptionKeeper::Release(uint64_t sub, const std::vector<std::string>& convs,
                                 Done<bool> done) {
  std::vector<std::string> gone;
  for (const std::string& conv : convs) {
    auto r = raw_.find(conv);
    if (r == raw_.end() || r->second.subs.erase(sub) == 0 || !r->second.subs.empty()) continue;
    // A lost one is gone from the server with its connection.
    const State state = r->second.state;
    raw_.erase(r);
    max_unchecked_.erase(conv);
    if (state == State::kSubscribing || state == State::kLive) gone.push_back(conv);
  }
  if (gone.empty()) {
    if (done) done(ClientResult<bool>(true));
    return;
  }
  UnsubscribeRaw(std::move(gone), std::move(done));
}

// A conversation held again while its UNSUBSCRIBE was in flight may have
// reached the server in either order: it is subscribed once more.
void SubscriptionKeeper::UnsubscribeRaw(std::vector<std::string> convs, Done<bool> done) {
  ops_.unsubscribe(convs, [self = shared_from_this(), convs,
                           done = std::move(done)](ClientResult<bool> r) mutable {
    for (const std::string& conv : convs) {
      auto it = self->raw_.find(conv);
      if (self->closed_ || it == self->raw_.end() || it->second.state == State::kIdle) continue;
      it->second.state = State::kLost;
      self->max_unchecked_.erase(conv);
    }
    self->ArmTick();
    if (done) done(std::move(r));
  });
}

// Sends SUBSCRIBE for convs; on its answer they are live (a MAX_SEQS to
// follow), or lost (re-subscribed on a later tick).
void SubscriptionKeeper::SubscribeRaw(std::vector<std::string> convs,
                                      std::function<void(ClientResult<bool>)> then) {
  for (const std::string& conv : convs) {
    if (auto it = raw_.find(conv); it != raw_.end()) it->second.state = State::kSubscribing;
  }
  auto self = shared_from_this();
  ops_.subscribe(
      convs, [self](Message m) { self->OnPush(m); },
      [self](std::vector<std::string> lost, std::string reason) {
        self->OnLost(std::move(lost), reason);
      },
      [self, convs, then = std::move(then)](ClientResult<bool> r) {
        for (const std::string& conv : convs) {
          auto it = self->raw_.find(conv);
          if (self->closed_ || it == self->raw_.end()) continue;
          if (it->second.state != State::kSubscribing) continue;  // lost again meanwhile
          it->second.state = r.ok() ? State::kLive : State::kLost;
          if (r.ok()) self->max_unchecked_.insert(conv);
        }
        if (!self->closed_) {
          self->CheckMaxSeqs();
          self->ArmTick();
        }
        then(std::move(r));
      });
}

void SubscriptionKeeper::OnLost(std::vector<std::string> convs, const std::string& reason) {
  std::vector<std::string> ours;
  for (std::string& conv : convs) {
    auto it = raw_.find(conv);
    if (closed_ || it == raw_.end() || it->second.state == State::kIdle) continue;
    it->second.state = State::kLost;
    max_unchecked_.erase(conv);
    ours.push_back(std::move(conv));
  }
  if (ours.empty()) return;
  if (!resubscribe_in_flight_ && resubscribe_at_ <= Clock::now()) {
    resubscribe_at_ = Clock::now() + Backoff();
  }
  Tell(ours, reason);
  ArmTick();
}

void SubscriptionKeeper::Resubscribe() {
  std::vector<std::string> lost;
  for (const auto& [conv, r] : raw_) {
    if (r.state == State::kLost) lost.push_back(conv);
  }
  if (lost.empty()) return;
  resubscribe_in_flight_ = true;
  SubscribeRaw(lost, [self = shared_from_this(), lost](ClientResult<bool> r) {
    self->resubscribe_in_flight_ = false;
    if (self->closed_) return;
    if (r.ok()) {
      self->failures_ = 0;
      return;
    }
    if (!Transient(r.code())) {
      std::vector<std::string> refused;
      for (const std::string& conv : lost) {
        if (self->raw_.count(conv)) refused.push_back(conv);
      }
      self->Tell(refused, "gave up re-subscribing: " + r.ToString());
      for (const std::string& conv : refused) {
        const std::set<uint64_t> holders = self->raw_[conv].subs;
        for (uint64_t sub : holders) {
          if (Member* m = self->Holding(sub, conv)) self->DropMember(sub, conv, m->epoch);
        }
        self->raw_.erase(conv);
        self->max_unchecked_.erase(conv);
      }
    }
    ++self->failures_;
    self->resubscribe_at_ = Clock::now() + self->Backoff();
  });
}

void SubscriptionKeeper::Tell(const std::vector<std::string>& convs, const std::string& reason) {
  std::map<std::shared_ptr<Handlers>, std::vector<std::string>> by_handlers;
  for (const std::string& conv : convs) {
    auto r = raw_.find(conv);
    if (r == raw_.end()) continue;
    for (uint64_t sub : r->second.subs) {
      Member* m = Holding(sub, conv);
      if (m && m->ready) by_handlers[m->handlers].push_back(conv);
    }
  }
  for (auto& [handlers, list] : by_handlers) {
    std::sort(list.begin(), list.end());
    ops_.post([handlers = handlers, list = std::move(list), reason]() mutable {
      if (handlers->on_lost) handlers->on_lost(std::move(list), reason);
    });
  }
}

}  // namespace seqd::client::detail
