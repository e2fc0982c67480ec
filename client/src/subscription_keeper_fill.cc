// SubscriptionKeeper's memberships taking a subscription's queue, delivery
// and gap filling: pushes to every holder's queue, the application's
// callbacks, MAX_SEQS after each SUBSCRIBE answer and every resync_every,
// pulls, and the tick (subscription_keeper.h).
#include <algorithm>

#include "subscription_keeper.h"

namespace seqd::client::detail {

namespace {

// How often the keeper looks at its timers: re-subscribe due, a MAX_SEQS
// to redo, a pull unanswered for retry_after.
constexpr auto kTickEvery = std::chrono::milliseconds(100);
constexpr uint32_t kPullLimit = 1000;
// Pulls of a range that came back without its first seq before the keeper
// takes those seqs for gone (trimmed by a conversation min seq).
constexpr int kMissesToSkip = 3;

}  // namespace

SubscriptionKeeper::Member* SubscriptionKeeper::Find(const Key& key) {
  auto s = subs_.find(key.sub);
  if (closed_ || s == subs_.end()) return nullptr;
  auto c = s->second.convs.find(key.conv);
  if (c == s->second.convs.end()) return nullptr;
  for (Member& m : c->second) {
    if (m.epoch == key.epoch) return &m;
  }
  return nullptr;
}

SubscriptionKeeper::Member* SubscriptionKeeper::Front(uint64_t sub, const std::string& conv) {
  auto s = subs_.find(sub);
  if (closed_ || s == subs_.end()) return nullptr;
  auto c = s->second.convs.find(conv);
  return c == s->second.convs.end() || c->second.empty() ? nullptr : &c->second.front();
}

SubscriptionKeeper::Member* SubscriptionKeeper::Holding(uint64_t sub, const std::string& conv) {
  auto s = subs_.find(sub);
  if (closed_ || s == subs_.end()) return nullptr;
  auto c = s->second.convs.find(conv);
  if (c == s->second.convs.end() || c->second.empty() || c->second.back().removed()) {
    return nullptr;
  }
  return &c->second.back();
}

// A member takes pushes and asks MAX_SEQS (what came since its start is
// pulled); a removed one pulls up to its cut.
void SubscriptionKeeper::StartFront(uint64_t sub, const std::string& conv) {
  Member& m = *Front(sub, conv);
  ReceiveQueue& q = *subs_[sub].queue;
  q.Forget(conv);
  m.misses = 0;
  q.SetLocalSeq(conv, m.start);
  if (m.removed()) {
    q.NoteMaxSeq(conv, m.gate->cut);
  } else if (raw_.count(conv)) {
    max_unchecked_.insert(conv);
    CheckMaxSeqs();
  }
}

void SubscriptionKeeper::EndIfCut(uint64_t sub, const std::string& conv) {
  for (;;) {
    Member* f = Front(sub, conv);  // null also when sub is gone
    if (!f || !f->ready || !f->removed()) return;
    Sub& s = subs_[sub];
    if (s.queue->local_seq(conv) < f->gate->cut) return;
    std::deque<Member>& runs = s.convs[conv];
    runs.pop_front();
    s.queue->Forget(conv);
    if (runs.empty()) {
      s.convs.erase(conv);
      return;
    }
    if (!runs.front().ready) return;  // it starts when its SUBSCRIBE answers
    StartFront(sub, conv);
  }
}

void SubscriptionKeeper::OnPush(const Message& m) {
  auto r = raw_.find(m.conv_id);
  if (closed_ || r == raw_.end()) return;
  for (uint64_t sub : r->second.subs) {
    Member* f = Front(sub, m.conv_id);
    if (f && f->ready && !f->removed()) subs_[sub].queue->Offer(m);
  }
}

// Posts on_message; when its turn comes it runs only if its membership was
// not dropped and the message is at or below the cut of a removal.
void SubscriptionKeeper::Deliver(uint64_t sub, const Message& m) {
  Member* f = Front(sub, m.conv_id);
  if (!f) return;
  ops_.post([self = shared_from_this(), gate = f->gate, handlers = f->handlers, m]() mutable {
    if (self->closed_ || gate->dropped || (gate->cut >= 0 && m.seq > gate->cut)) return;
    if (handlers->on_message) handlers->on_message(std::move(m));
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
      auto it = self->raw_.find(convs[i]);
      if (it == self->raw_.end() || it->second.state != State::kLive) continue;
      if (!ok) {
        self->max_unchecked_.insert(convs[i]);
        continue;
      }
      for (uint64_t sub : it->second.subs) {
        Member* f = self->Front(sub, convs[i]);
        if (f && f->ready && !f->removed()) self->subs_[sub].queue->NoteMaxSeq(convs[i], (*r)[i]);
      }
    }
  });
}

void SubscriptionKeeper::Pull(uint64_t sub, const std::string& conv, int64_t from, int64_t to) {
  PullOptions o;
  o.from_seq = from;
  o.to_seq = to;
  o.limit = kPullLimit;
  ops_.pull(conv, o, [self = shared_from_this(), sub, conv, from, to](ClientResult<PullPage> page) {
    if (self->closed_ || !page.ok()) return;  // re-asked on a tick
    Member* f = self->Front(sub, conv);
    if (!f || !f->ready) return;
    self->OnPulled(sub, conv, from, to, *page);
    self->EndIfCut(sub, conv);
  });
}

void SubscriptionKeeper::OnPulled(uint64_t sub, const std::string& conv, int64_t from, int64_t to,
                                  const PullPage& page) {
  Sub& s = subs_[sub];
  s.queue->OnPulled(page.messages);
  if (s.queue->local_seq(conv) >= from || !page.is_end) return;
  // The range's start did not come back. A server that lags (a replica
  // behind) answers it later; seqs below the conversation's min seq never.
  Member& m = *Front(sub, conv);
  if (m.miss_from != from) {
    m.miss_from = from;
    m.misses = 0;
  }
  if (++m.misses < kMissesToSkip) return;
  int64_t first_present = to + 1;
  for (const Message& msg : page.messages) {
    if (msg.seq >= from) first_present = std::min(first_present, msg.seq);
  }
  m.misses = 0;
  s.queue->SetLocalSeq(conv, first_present - 1);
}

bool SubscriptionKeeper::HasMembers() const {
  return std::any_of(subs_.begin(), subs_.end(),
                     [](const auto& s) { return !s.second.convs.empty(); });
}

void SubscriptionKeeper::ArmTick() {
  if (ticking_ || closed_ || (raw_.empty() && !HasMembers())) return;
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
    for (const auto& [conv, r] : raw_) {
      if (r.state == State::kLive) max_unchecked_.insert(conv);
    }
  }
  CheckMaxSeqs();
  for (auto& [id, s] : subs_) s.queue->Tick();
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
