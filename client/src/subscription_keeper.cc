// SubscriptionKeeper's members and raw subscriptions: Subscribe, Add,
// Remove, lost subscriptions and re-subscribing (subscription_keeper.h).
#include "subscription_keeper.h"

#include <algorithm>
#include <map>
#include <set>

namespace seqd::client::detail {

namespace {

constexpr auto kPullRetryAfter = std::chrono::milliseconds(1000);
constexpr size_t kMaxHeld = 1000;

bool Transient(StatusCode code) {
  return code == StatusCode::kTimeout || code == StatusCode::kUnavailable ||
         code == StatusCode::kStoreUnavailable || code == StatusCode::kShuttingDown ||
         code == StatusCode::kWrongOwner || code == StatusCode::kInternal;
}

}  // namespace

SubscriptionKeeper::SubscriptionKeeper(boost::asio::any_io_executor strand, Ops ops,
                                       std::chrono::milliseconds backoff_initial,
                                       std::chrono::milliseconds backoff_max,
                                       std::chrono::milliseconds resync_every)
    : timer_(std::move(strand)),
      ops_(std::move(ops)),
      backoff_initial_(backoff_initial),
      backoff_max_(backoff_max),
      resync_every_(resync_every) {
  MakeSub(kDefaultSub, nullptr);
}

SubscriptionKeeper::Sub& SubscriptionKeeper::MakeSub(uint64_t id,
                                                     std::shared_ptr<Handlers> handlers) {
  Sub& s = subs_[id];
  s.handlers = std::move(handlers);
  // The queue lives in the keeper and calls back into it synchronously.
  s.queue = std::make_unique<ReceiveQueue>(
      [this, id](const Message& m) { Deliver(id, m); },
      [this, id](const std::string& conv, int64_t from, int64_t to) { Pull(id, conv, from, to); },
      ReceiveQueue::Options{kPullRetryAfter, kMaxHeld, [] { return Clock::now(); }});
  return s;
}

SubscriptionKeeper::Member* SubscriptionKeeper::Current(const Key& key) {
  if (closed_) return nullptr;
  auto s = subs_.find(key.sub);
  if (s == subs_.end()) return nullptr;
  auto m = s->second.members.find(key.conv);
  if (m == s->second.members.end() || m->second.epoch != key.epoch) return nullptr;
  return &m->second;
}

void SubscriptionKeeper::Subscribe(std::vector<std::string> conv_ids,
                                   AsyncClient::MessageFn on_message, AsyncClient::LostFn on_lost,
                                   Done<bool> done) {
  if (closed_) return done(ClientResult<bool>(StatusCode::kCancelled, "client closed"));
  AddMembers(kDefaultSub, std::move(conv_ids), {},
             std::make_shared<Handlers>(Handlers{std::move(on_message), std::move(on_lost)}),
             std::move(done));
}

void SubscriptionKeeper::NewSubscription(uint64_t id, AsyncClient::MessageFn on_message,
                                         AsyncClient::LostFn on_lost) {
  if (closed_) return;
  MakeSub(id, std::make_shared<Handlers>(Handlers{std::move(on_message), std::move(on_lost)}));
}

void SubscriptionKeeper::Add(uint64_t sub, std::vector<std::string> conv_ids,
                             std::map<std::string, int64_t> from, Done<bool> done) {
  auto it = subs_.find(sub);
  if (closed_ || sub == kDefaultSub || it == subs_.end()) {
    return done(ClientResult<bool>(StatusCode::kCancelled, "subscription closed"));
  }
  AddMembers(sub, std::move(conv_ids), std::move(from), it->second.handlers, std::move(done));
}

void SubscriptionKeeper::AddMembers(uint64_t sub, std::vector<std::string> conv_ids,
                                    std::map<std::string, int64_t> from,
                                    std::shared_ptr<Handlers> handlers, Done<bool> done) {
  Sub& s = subs_[sub];
  std::vector<Key> fresh;
  std::vector<int64_t> starts;
  std::vector<std::string> ask;  // those that start at their max seq now
  std::vector<size_t> ask_at;
  std::vector<std::string> again;  // the default subscription's, with new callbacks
  std::set<std::string> seen;
  for (std::string& conv : conv_ids) {
    if (!seen.insert(conv).second) continue;
    if (auto m = s.members.find(conv); m != s.members.end()) {
      if (sub != kDefaultSub) continue;  // already there: left as it is
      m->second.handlers = handlers;
      again.push_back(conv);
      continue;
    }
    Member& m = s.members[conv];
    m.handlers = handlers;
    m.epoch = next_epoch_++;
    raw_[conv].subs.insert(sub);
    auto f = from.find(conv);
    starts.push_back(f != from.end() ? f->second : 0);
    if (f == from.end()) {
      ask.push_back(conv);
      ask_at.push_back(fresh.size());
    }
    fresh.push_back(Key{sub, std::move(conv), m.epoch});
  }
  if (ask.empty()) return Start(fresh, std::move(starts), std::move(again), std::move(done));
  // The starting point first: every seq above today's max is delivered,
  // whether it comes pushed or pulled.
  const size_t n = ask.size();
  ops_.max_seqs(std::move(ask),
                [self = shared_from_this(), fresh, starts, ask_at, n, again = std::move(again),
                 done = std::move(done)](ClientResult<std::vector<int64_t>> r) mutable {
                  if (!r.ok() || r->size() != n) {
                    self->Abandon(fresh);
                    if (r.ok())
                      return done(ClientResult<bool>(StatusCode::kProtocol, "malformed MAX_SEQS"));
                    return done(ClientResult<bool>(r.code(), r.message()));
                  }
                  for (size_t k = 0; k < n; ++k) starts[ask_at[k]] = (*r)[k];
                  self->Start(fresh, std::move(starts), std::move(again), std::move(done));
                });
}

void SubscriptionKeeper::Start(const std::vector<Key>& keys, std::vector<int64_t> starts,
                               std::vector<std::string> again, Done<bool> done) {
  std::vector<std::string> convs = std::move(again);
  for (size_t i = 0; i < keys.size(); ++i) {
    Member* m = Current(keys[i]);
    if (!m) continue;  // removed meanwhile
    ReceiveQueue& q = *subs_[keys[i].sub].queue;
    q.Forget(keys[i].conv);
    q.SetLocalSeq(keys[i].conv, starts[i]);
    m->started = true;
    convs.push_back(keys[i].conv);
  }
  if (convs.empty()) return done(ClientResult<bool>(true));
  SubscribeRaw(std::move(convs), [self = shared_from_this(), keys,
                                  done = std::move(done)](ClientResult<bool> r) mutable {
    if (!r.ok()) self->Abandon(keys);
    done(std::move(r));
  });
}

void SubscriptionKeeper::Abandon(const std::vector<Key>& keys) {
  std::vector<std::string> gone;
  for (const Key& key : keys) {
    if (Current(key) && DropMember(key.sub, key.conv)) gone.push_back(key.conv);
  }
  if (!gone.empty()) Unsubscribe(std::move(gone), nullptr);
}

bool SubscriptionKeeper::DropMember(uint64_t sub, const std::string& conv) {
  auto s = subs_.find(sub);
  if (s == subs_.end() || s->second.members.erase(conv) == 0) return false;
  s->second.queue->Forget(conv);
  auto r = raw_.find(conv);
  if (r == raw_.end()) return false;
  r->second.subs.erase(sub);
  if (!r->second.subs.empty()) return false;
  // A lost one is gone from the server with its connection.
  const bool sent = r->second.state == State::kSubscribing || r->second.state == State::kLive;
  raw_.erase(r);
  max_unchecked_.erase(conv);
  return sent;
}

void SubscriptionKeeper::Remove(uint64_t sub, std::vector<std::string> conv_ids, Done<bool> done) {
  std::vector<std::string> gone;
  for (const std::string& conv : conv_ids) {
    if (DropMember(sub, conv)) gone.push_back(conv);
  }
  if (gone.empty()) return done(ClientResult<bool>(true));
  Unsubscribe(std::move(gone), std::move(done));
}

void SubscriptionKeeper::CloseSubscription(uint64_t sub) {
  auto s = subs_.find(sub);
  if (s == subs_.end() || sub == kDefaultSub) return;
  std::vector<std::string> convs;
  for (const auto& [conv, m] : s->second.members) convs.push_back(conv);
  std::vector<std::string> gone;
  for (const std::string& conv : convs) {
    if (DropMember(sub, conv)) gone.push_back(conv);
  }
  subs_.erase(sub);
  if (!gone.empty()) Unsubscribe(std::move(gone), nullptr);
}

// A conversation subscribed again while its UNSUBSCRIBE was in flight may
// have reached the server in either order: it is subscribed once more.
void SubscriptionKeeper::Unsubscribe(std::vector<std::string> convs, Done<bool> done) {
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
        for (uint64_t sub : holders) self->DropMember(sub, conv);
      }
    }
    ++self->failures_;
    self->resubscribe_at_ = Clock::now() + self->Backoff();
  });
}

// Posts on_lost once per callback set, for the started members of convs.
void SubscriptionKeeper::Tell(const std::vector<std::string>& convs, const std::string& reason) {
  std::map<std::shared_ptr<Handlers>, std::vector<std::string>> by_handlers;
  for (const std::string& conv : convs) {
    auto r = raw_.find(conv);
    if (r == raw_.end()) continue;
    for (uint64_t sub : r->second.subs) {
      auto m = subs_[sub].members.find(conv);
      if (m != subs_[sub].members.end() && m->second.started) {
        by_handlers[m->second.handlers].push_back(conv);
      }
    }
  }
  for (auto& [handlers, list] : by_handlers) {
    std::sort(list.begin(), list.end());
    ops_.post([handlers = handlers, list = std::move(list), reason]() mutable {
      if (handlers->on_lost) handlers->on_lost(std::move(list), reason);
    });
  }
}

void SubscriptionKeeper::Close() {
  closed_ = true;
  subs_.clear();
  raw_.clear();
  max_unchecked_.clear();
  timer_.cancel();
}

}  // namespace seqd::client::detail
