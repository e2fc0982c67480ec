// SubscriptionKeeper's calls: Subscribe and Unsubscribe (the default
// subscription), subscriptions made, Add and Remove, closing
// (subscription_keeper.h).
#include "subscription_keeper.h"

#include <algorithm>
#include <set>

namespace seqd::client::detail {

namespace {

constexpr auto kPullRetryAfter = std::chrono::milliseconds(1000);
constexpr size_t kMaxHeld = 1000;

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

void SubscriptionKeeper::Subscribe(std::vector<std::string> conv_ids,
                                   AsyncClient::MessageFn on_message, AsyncClient::LostFn on_lost,
                                   Done<bool> done) {
  if (closed_) return done(ClientResult<bool>(StatusCode::kCancelled, "client closed"));
  AddMembers(kDefaultSub, std::move(conv_ids), {},
             std::make_shared<Handlers>(Handlers{std::move(on_message), std::move(on_lost)}),
             std::move(done));
}

void SubscriptionKeeper::Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done) {
  std::vector<std::string> held;
  for (const std::string& conv : conv_ids) {
    Member* m = Holding(kDefaultSub, conv);
    if (!m) continue;
    DropMember(kDefaultSub, conv, m->epoch);
    held.push_back(conv);
  }
  Release(kDefaultSub, held, std::move(done));
}

void SubscriptionKeeper::NewSubscription(uint64_t id, AsyncClient::MessageFn on_message,
                                         AsyncClient::LostFn on_lost) {
  if (closed_) return;
  MakeSub(id, std::make_shared<Handlers>(Handlers{std::move(on_message), std::move(on_lost)}));
}

void SubscriptionKeeper::Add(uint64_t sub, std::vector<std::string> conv_ids,
                             std::map<std::string, int64_t> from, Done<bool> done) {
  Serialize(
      sub,
      [self = shared_from_this(), sub, conv_ids = std::move(conv_ids),
       from = std::move(from)](Done2 finish) mutable {
        auto it = self->subs_.find(sub);
        if (it == self->subs_.end()) {
          return finish(ClientResult<bool>(StatusCode::kCancelled, "subscription closed"));
        }
        self->AddMembers(sub, std::move(conv_ids), std::move(from), it->second.handlers,
                         std::move(finish));
      },
      std::move(done));
}

void SubscriptionKeeper::Remove(uint64_t sub, std::vector<std::string> conv_ids, Done<bool> done) {
  Serialize(
      sub,
      [self = shared_from_this(), sub, conv_ids = std::move(conv_ids)](Done2 finish) mutable {
        self->CutMembers(sub, std::move(conv_ids), std::move(finish));
      },
      std::move(done));
}

void SubscriptionKeeper::Serialize(uint64_t sub, std::function<void(Done2)> op, Done<bool> done) {
  auto it = subs_.find(sub);
  if (closed_ || sub == kDefaultSub || it == subs_.end()) {
    return done(ClientResult<bool>(StatusCode::kCancelled, "subscription closed"));
  }
  it->second.ops.push_back(
      [self = shared_from_this(), sub, op = std::move(op), done = std::move(done)](Done2) mutable {
        op([self, sub, done = std::move(done)](ClientResult<bool> r) mutable {
          done(std::move(r));
          if (auto s = self->subs_.find(sub); s != self->subs_.end()) s->second.busy = false;
          self->RunNext(sub);
        });
      });
  RunNext(sub);
}

void SubscriptionKeeper::RunNext(uint64_t sub) {
  auto it = subs_.find(sub);
  if (closed_ || it == subs_.end() || it->second.busy || it->second.ops.empty()) return;
  std::function<void(Done2)> op = std::move(it->second.ops.front());
  it->second.ops.pop_front();
  it->second.busy = true;
  op(nullptr);
}

void SubscriptionKeeper::AddMembers(uint64_t sub, std::vector<std::string> conv_ids,
                                    std::map<std::string, int64_t> from,
                                    std::shared_ptr<Handlers> handlers, Done<bool> done) {
  std::vector<Key> fresh;
  std::vector<int64_t> starts;
  std::vector<std::string> ask;  // those that start at their max seq now
  std::vector<size_t> ask_at;
  std::vector<std::string> again;  // the default subscription's, with new callbacks
  std::set<std::string> seen;
  for (std::string& conv : conv_ids) {
    if (!seen.insert(conv).second) continue;
    if (Member* m = Holding(sub, conv)) {
      if (sub != kDefaultSub) continue;  // already there: left as it is
      m->handlers = handlers;
      again.push_back(conv);
      continue;
    }
    std::deque<Member>& runs = subs_[sub].convs[conv];
    runs.push_back(Member{handlers, std::make_shared<Gate>(), next_epoch_++});
    Hold(sub, conv);
    auto f = from.find(conv);
    starts.push_back(f != from.end() ? f->second : 0);
    if (f == from.end()) {
      ask.push_back(conv);
      ask_at.push_back(fresh.size());
    }
    fresh.push_back(Key{sub, std::move(conv), runs.back().epoch});
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

// Subscribes the memberships; once the SUBSCRIBE answered they are ready
// (pushes before that are pulled after: a failed Add delivers nothing).
void SubscriptionKeeper::Start(const std::vector<Key>& keys, std::vector<int64_t> starts,
                               std::vector<std::string> again, Done<bool> done) {
  std::vector<std::string> convs = std::move(again);
  for (size_t i = 0; i < keys.size(); ++i) {
    Member* m = Find(keys[i]);
    if (!m) continue;  // dropped meanwhile
    m->start = starts[i];
    convs.push_back(keys[i].conv);
  }
  if (convs.empty()) return done(ClientResult<bool>(true));
  SubscribeRaw(std::move(convs), [self = shared_from_this(), keys,
                                  done = std::move(done)](ClientResult<bool> r) mutable {
    if (!r.ok()) {
      self->Abandon(keys);
      return done(std::move(r));
    }
    for (const Key& key : keys) {
      Member* m = self->Find(key);
      if (!m) continue;
      m->ready = true;
      if (self->Front(key.sub, key.conv) == m) {
        self->StartFront(key.sub, key.conv);
        self->EndIfCut(key.sub, key.conv);
      }
    }
    done(std::move(r));
  });
}

void SubscriptionKeeper::Abandon(const std::vector<Key>& keys) {
  std::map<uint64_t, std::vector<std::string>> released;
  for (const Key& key : keys) {
    if (!Find(key)) continue;
    DropMember(key.sub, key.conv, key.epoch);
    released[key.sub].push_back(key.conv);
  }
  for (auto& [sub, convs] : released) Release(sub, convs, nullptr);
}

void SubscriptionKeeper::CutMembers(uint64_t sub, std::vector<std::string> conv_ids,
                                    Done<bool> done) {
  std::vector<Key> keys;
  std::vector<std::string> convs;
  std::set<std::string> seen;
  for (const std::string& conv : conv_ids) {
    Member* m = Holding(sub, conv);
    if (!m || !seen.insert(conv).second) continue;
    keys.push_back(Key{sub, conv, m->epoch});
    convs.push_back(conv);
  }
  if (keys.empty()) return done(ClientResult<bool>(true));
  const size_t n = convs.size();
  ops_.max_seqs(std::move(convs), [self = shared_from_this(), sub, keys, n, done = std::move(done)](
                                      ClientResult<std::vector<int64_t>> r) mutable {
    if (!r.ok() || r->size() != n) {  // nothing removed
      if (r.ok()) return done(ClientResult<bool>(StatusCode::kProtocol, "malformed MAX_SEQS"));
      return done(ClientResult<bool>(r.code(), r.message()));
    }
    std::vector<std::string> cut;
    for (size_t i = 0; i < n; ++i) {
      Member* m = self->Find(keys[i]);
      if (!m || m->removed()) continue;
      m->gate->cut = std::max<int64_t>((*r)[i], 0);
      cut.push_back(keys[i].conv);
      if (m->ready && self->Front(sub, keys[i].conv) == m) {
        self->subs_[sub].queue->NoteMaxSeq(keys[i].conv, m->gate->cut);
        self->EndIfCut(sub, keys[i].conv);
      }
    }
    self->ArmTick();
    self->Release(sub, cut, std::move(done));
  });
}

void SubscriptionKeeper::DropMember(uint64_t sub, const std::string& conv, uint64_t epoch) {
  auto s = subs_.find(sub);
  if (s == subs_.end()) return;
  auto c = s->second.convs.find(conv);
  if (c == s->second.convs.end()) return;
  std::deque<Member>& runs = c->second;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].epoch != epoch) continue;
    runs[i].gate->dropped = true;
    const bool owned = i == 0 && runs[i].ready;
    runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(i));
    if (owned) s->second.queue->Forget(conv);
    break;
  }
  if (runs.empty()) {
    s->second.convs.erase(c);
    s->second.queue->Forget(conv);
    return;
  }
  if (runs.front().ready) {
    StartFront(sub, conv);
    EndIfCut(sub, conv);
  }
}

void SubscriptionKeeper::CloseSubscription(uint64_t sub) {
  auto s = subs_.find(sub);
  if (s == subs_.end() || sub == kDefaultSub) return;
  std::vector<std::string> held;
  for (auto& [conv, runs] : s->second.convs) {
    for (Member& m : runs) {
      m.gate->dropped = true;
      if (!m.removed()) held.push_back(conv);
    }
  }
  std::deque<std::function<void(Done2)>> waiting = std::move(s->second.ops);
  subs_.erase(s);
  Release(sub, held, nullptr);
  for (auto& op : waiting) op(nullptr);  // each finds the subscription gone: kCancelled
}

void SubscriptionKeeper::Close() {
  closed_ = true;
  subs_.clear();
  raw_.clear();
  max_unchecked_.clear();
  timer_.cancel();
}

}  // namespace seqd::client::detail
