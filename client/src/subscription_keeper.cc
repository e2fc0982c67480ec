#include "subscription_keeper.h"

#include <algorithm>
#include <map>

namespace seqd::client::detail {

namespace {

// How often the keeper looks at its timers: re-subscribe due, a MAX_SEQS
// to redo, a pull unanswered for retry_after.
constexpr auto kTickEvery = std::chrono::milliseconds(100);
constexpr auto kPullRetryAfter = std::chrono::milliseconds(1000);
constexpr uint32_t kPullLimit = 1000;
// Pulls of a range that came back without its first seq before the keeper
// takes those seqs for gone (trimmed by a conversation min seq).
constexpr int kMissesToSkip = 3;

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
      resync_every_(resync_every),
      queue_([this](const Message& m) { Deliver(m); },
             [this](const std::string& conv, int64_t from, int64_t to) { Pull(conv, from, to); },
             ReceiveQueue::Options{kPullRetryAfter, 1000, [] { return Clock::now(); }}) {}

bool SubscriptionKeeper::Current(const std::string& conv, uint64_t epoch) const {
  auto it = convs_.find(conv);
  return !closed_ && it != convs_.end() && it->second.epoch == epoch;
}

void SubscriptionKeeper::Subscribe(std::vector<std::string> conv_ids,
                                   AsyncClient::MessageFn on_message, AsyncClient::LostFn on_lost,
                                   Done<bool> done) {
  if (closed_) return done(ClientResult<bool>(StatusCode::kCancelled, "client closed"));
  auto handlers = std::make_shared<Handlers>(Handlers{std::move(on_message), std::move(on_lost)});
  Epochs mine;
  for (const std::string& conv : conv_ids) {
    Conv& c = convs_[conv];
    c.handlers = handlers;
    c.state = State::kStarting;
    c.epoch = next_epoch_++;
    mine.emplace_back(conv, c.epoch);
  }
  // The starting point first: every seq above today's max is delivered,
  // whether it comes pushed or pulled.
  ops_.max_seqs(std::move(conv_ids), [self = shared_from_this(), mine, done = std::move(done)](
                                         ClientResult<std::vector<int64_t>> r) {
    if (!r.ok() || r->size() != mine.size()) {
      for (const auto& [conv, epoch] : mine) {
        if (self->Current(conv, epoch)) self->Forget(conv);
      }
      if (r.ok()) return done(ClientResult<bool>(StatusCode::kProtocol, "malformed MAX_SEQS"));
      return done(ClientResult<bool>(r.code(), r.message()));
    }
    for (size_t i = 0; i < mine.size(); ++i) {
      if (self->Current(mine[i].first, mine[i].second)) {
        self->queue_.SetLocalSeq(mine[i].first, (*r)[i]);
      }
    }
    self->SubscribeRaw(mine, [self, mine, done = std::move(done)](ClientResult<bool> sub) {
      if (!sub.ok()) {
        for (const auto& [conv, epoch] : mine) {
          if (self->Current(conv, epoch)) self->Forget(conv);
        }
      }
      done(std::move(sub));
    });
  });
}

// Sends SUBSCRIBE for the conversations of `convs` still current; on its
// answer they are live, with a MAX_SEQS to follow.
void SubscriptionKeeper::SubscribeRaw(const Epochs& convs,
                                      std::function<void(ClientResult<bool>)> then) {
  std::vector<std::string> names;
  Epochs asked;
  for (const auto& [conv, epoch] : convs) {
    if (!Current(conv, epoch)) continue;
    convs_[conv].state = State::kSubscribing;
    names.push_back(conv);
    asked.emplace_back(conv, epoch);
  }
  if (names.empty()) return then(ClientResult<bool>(true));
  auto self = shared_from_this();
  ops_.subscribe(
      std::move(names), [self](Message m) { self->OnPush(std::move(m)); },
      [self](std::vector<std::string> lost, std::string reason) {
        self->OnLost(std::move(lost), reason);
      },
      [self, asked, then = std::move(then)](ClientResult<bool> r) {
        if (r.ok()) {
          for (const auto& [conv, epoch] : asked) {
            if (!self->Current(conv, epoch)) continue;
            Conv& c = self->convs_[conv];
            if (c.state != State::kSubscribing) continue;  // lost again meanwhile
            c.state = State::kLive;
            self->max_unchecked_.insert(conv);
          }
          self->CheckMaxSeqs();
          self->ArmTick();
        }
        then(std::move(r));
      });
}

void SubscriptionKeeper::OnPush(Message m) {
  if (closed_ || !convs_.count(m.conv_id)) return;
  queue_.Offer(m);
}

void SubscriptionKeeper::OnLost(std::vector<std::string> convs, const std::string& reason) {
  std::vector<std::string> ours;
  for (std::string& conv : convs) {
    auto it = convs_.find(conv);
    if (closed_ || it == convs_.end() || it->second.state == State::kStarting) continue;
    it->second.state = State::kLost;
    max_unchecked_.erase(conv);
    ours.push_back(std::move(conv));
  }
  if (ours.empty()) return;
  if (!resubscribe_in_flight_ && resubscribe_at_ <= Clock::now()) {
    resubscribe_at_ = Clock::now() + Backoff();
  }
  Tell(std::move(ours), reason);
  ArmTick();
}

void SubscriptionKeeper::Resubscribe() {
  Epochs lost;
  for (const auto& [conv, c] : convs_) {
    if (c.state == State::kLost) lost.emplace_back(conv, c.epoch);
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
    std::vector<std::string> refused;
    for (const auto& [conv, epoch] : lost) {
      if (!self->Current(conv, epoch)) continue;
      if (Transient(r.code())) {
        self->convs_[conv].state = State::kLost;
      } else {
        refused.push_back(conv);
      }
    }
    if (!refused.empty()) {
      self->Tell(refused, "gave up re-subscribing: " + r.ToString());
      for (const std::string& conv : refused) self->Forget(conv);
    }
    ++self->failures_;
    self->resubscribe_at_ = Clock::now() + self->Backoff();
  });
}

// One MAX_SEQS at a time for every live conversation not yet checked since
// its (re)subscription; a failed one is redone on a later tick.
void SubscriptionKeeper::CheckMaxSeqs() {
  if (max_check_in_flight_ || max_unchecked_.empty() || closed_) return;
  std::vector<std::string> convs(max_unchecked_.begin(), max_unchecked_.end());
  max_unchecked_.clear();
  max_check_in_flight_ = true;
  ops_.max_seqs(convs, [self = shared_from_this(), convs](ClientResult<std::vector<int64_t>> r) {
    self->max_check_in_flight_ = false;
    if (self->closed_) return;
    const bool ok = r.ok() && r->size() == convs.size();
    for (size_t i = 0; i < convs.size(); ++i) {
      auto it = self->convs_.find(convs[i]);
      if (it == self->convs_.end() || it->second.state != State::kLive) continue;
      if (ok) {
        self->queue_.NoteMaxSeq(convs[i], (*r)[i]);
      } else {
        self->max_unchecked_.insert(convs[i]);
      }
    }
  });
}

void SubscriptionKeeper::Pull(const std::string& conv, int64_t from, int64_t to) {
  PullOptions o;
  o.from_seq = from;
  o.to_seq = to;
  o.limit = kPullLimit;
  ops_.pull(conv, o, [self = shared_from_this(), conv, from, to](ClientResult<PullPage> page) {
    if (self->closed_ || !page.ok() || !self->convs_.count(conv)) return;  // re-asked on a tick
    self->OnPulled(conv, from, to, *page);
  });
}

void SubscriptionKeeper::OnPulled(const std::string& conv, int64_t from, int64_t to,
                                  const PullPage& page) {
  queue_.OnPulled(page.messages);
  if (queue_.local_seq(conv) >= from || !page.is_end) return;
  // The range's start did not come back. A server that lags (a replica
  // behind) answers it later; seqs below the conversation's min seq never.
  Conv& c = convs_[conv];
  if (c.miss_from != from) {
    c.miss_from = from;
    c.misses = 0;
  }
  if (++c.misses < kMissesToSkip) return;
  int64_t first_present = to + 1;
  for (const Message& m : page.messages) {
    if (m.seq >= from) first_present = std::min(first_present, m.seq);
  }
  c.misses = 0;
  queue_.SetLocalSeq(conv, first_present - 1);
}

void SubscriptionKeeper::Deliver(const Message& m) {
  auto it = convs_.find(m.conv_id);
  if (it == convs_.end()) return;
  ops_.post([handlers = it->second.handlers, m]() mutable {
    if (handlers->on_message) handlers->on_message(std::move(m));
  });
}

// Posts on_lost once per application subscriber, for its conversations.
void SubscriptionKeeper::Tell(std::vector<std::string> convs, const std::string& reason) {
  std::map<std::shared_ptr<Handlers>, std::vector<std::string>> by_handlers;
  for (std::string& conv : convs) by_handlers[convs_[conv].handlers].push_back(std::move(conv));
  for (auto& [handlers, list] : by_handlers) {
    std::sort(list.begin(), list.end());
    ops_.post([handlers = handlers, list = std::move(list), reason]() mutable {
      if (handlers->on_lost) handlers->on_lost(std::move(list), reason);
    });
  }
}

void SubscriptionKeeper::Forget(const std::string& conv) {
  convs_.erase(conv);
  max_unchecked_.erase(conv);
  queue_.Forget(conv);
}

void SubscriptionKeeper::Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done) {
  for (const std::string& conv : conv_ids) Forget(conv);
  ops_.unsubscribe(std::move(conv_ids), std::move(done));
}

void SubscriptionKeeper::Close() {
  closed_ = true;
  convs_.clear();
  max_unchecked_.clear();
  timer_.cancel();
}

void SubscriptionKeeper::ArmTick() {
  if (ticking_ || closed_ || convs_.empty()) return;
  ticking_ = true;
  timer_.expires_after(kTickEvery);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->ticking_ = false;
    if (ec || self->closed_) return;
    self->Tick();
    self->ArmTick();
  });
}

void SubscriptionKeeper::Tick() {
  const Clock::time_point now = Clock::now();
  if (!resubscribe_in_flight_ && resubscribe_at_ <= now) Resubscribe();
  if (resync_every_.count() > 0 && resync_at_ <= now) {
    // A push lost with no later push to show the gap (an owner move in
    // cluster mode) is pulled once MAX_SEQS names it.
    resync_at_ = now + resync_every_;
    for (const auto& [conv, c] : convs_) {
      if (c.state == State::kLive) max_unchecked_.insert(conv);
    }
  }
  CheckMaxSeqs();
  queue_.Tick();
}

// Exponential in the consecutive failures, capped, jittered to [1/2, 1].
SubscriptionKeeper::Clock::duration SubscriptionKeeper::Backoff() {
  auto d = std::chrono::duration_cast<Clock::duration>(backoff_initial_);
  const auto cap = std::chrono::duration_cast<Clock::duration>(backoff_max_);
  for (int i = 0; i < failures_ && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  if (d.count() <= 1) return d;
  std::uniform_int_distribution<Clock::rep> dist(d.count() / 2, d.count());
  return Clock::duration(dist(rng_));
}

}  // namespace seqd::client::detail
