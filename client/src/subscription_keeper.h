// SubscriptionKeeper: subscriptions that survive connection loss
// (ClientOptions::resubscribe), to conversations added and removed as
// they go. Internal to the client library.
//
// Contract towards the application, per subscription and conversation
// membership (from its Add to its Remove):
//   - on_message sees every message whose seq is above the membership's
//     start (the seq given to Add, else the conversation's max seq when Add
//     asked), in seq order, each exactly once: no hole, no duplicate,
//     across lost connections, server restarts and PUSH_DROPPED;
//   - Remove ends it at a cut, the conversation's max seq when Remove asks:
//     every message up to the cut is still delivered (queued ones, then
//     pulled ones), none after it; a membership of the same conversation
//     added later delivers only once this one is done;
//   - on_lost(convs, reason) tells that pushes stopped; the keeper
//     re-subscribes by itself (jittered backoff, without end) and pulls
//     what was missed. on_lost runs once more, with a reason that starts
//     "gave up", only if the server refuses the re-subscription itself
//     (e.g. PERMISSION_DENIED); nothing of those conversations follows.
// The default subscription (id 0, AsyncClient::Subscribe) has callbacks per
// conversation, starts from now, and its Unsubscribe drops at once: no
// callback of those conversations runs once it ran.
//
// How: each subscription has its own ReceiveQueue, holding each
// conversation's last delivered seq; the memberships of a conversation
// take the queue in Add order. The server side is one raw subscription per
// conversation, shared by the subscriptions holding it (a membership not
// yet removed holds it): SUBSCRIBE for each Add (the server ignores a
// conversation subscribed twice), UNSUBSCRIBE when the last holder lets it
// go. Pushes are offered to every holder's queue; a gap is pulled
// (PULL_RANGE). After every SUBSCRIBE answer, a MAX_SEQS tells the queues
// what exists, so messages sent while no subscription was live are pulled
// even if no push follows; and every `resync_every` (0: never) a MAX_SEQS
// of every live conversation catches a push lost with nothing after it
// (cluster mode: an owner move). Seqs the server no longer has (below a
// conversation's min seq) are skipped once three pulls of the range, at
// least retry_after apart, came back without them.
//
// Files: subscription_keeper.cc (the calls: Subscribe, Add, Remove,
// closing), subscription_keeper_raw.cc (the raw subscriptions, lost and
// re-subscribed), subscription_keeper_fill.cc (memberships taking the
// queue, delivery, MAX_SEQS, pulls, the tick).
//
// Thread safety: none; every member runs on the client's strand (the Ops'
// callbacks must run there too). Application callbacks go through
// Ops::post, never run inside the keeper.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "seqd/client.h"
#include "seqd/receive_queue.h"

namespace seqd::client::detail {

class SubscriptionKeeper : public std::enable_shared_from_this<SubscriptionKeeper> {
 public:
  using Clock = std::chrono::steady_clock;
  template <typename T>
  using Done = AsyncClient::Done<T>;
  // AsyncClient::Subscribe's subscription: callbacks per conversation.
  static constexpr uint64_t kDefaultSub = 0;

  // The transport the keeper drives. Every callback runs on the strand.
  struct Ops {
    // The raw SUBSCRIBE: pushes go to on_message until on_lost(convs, reason).
    std::function<void(std::vector<std::string>, AsyncClient::MessageFn, AsyncClient::LostFn,
                       Done<bool>)>
        subscribe;
    std::function<void(std::vector<std::string>, Done<bool>)> unsubscribe;
    std::function<void(std::string, PullOptions, Done<PullPage>)> pull;
    std::function<void(std::vector<std::string>, Done<std::vector<int64_t>>)> max_seqs;
    // Runs fn on the strand later: how application callbacks run.
    std::function<void(std::function<void()>)> post;
  };

  SubscriptionKeeper(boost::asio::any_io_executor strand, Ops ops,
                     std::chrono::milliseconds backoff_initial,
                     std::chrono::milliseconds backoff_max,
                     std::chrono::milliseconds resync_every = std::chrono::milliseconds(0));

  // As AsyncClient::Subscribe: conversations of the default subscription,
  // from now, with callbacks of their own (a conversation it has already
  // gets these callbacks and keeps its position). `done` runs once the
  // server answered the SUBSCRIBE (true), or with the error of MAX_SEQS or
  // SUBSCRIBE (then none of conv_ids was added).
  void Subscribe(std::vector<std::string> conv_ids, AsyncClient::MessageFn on_message,
                 AsyncClient::LostFn on_lost, Done<bool> done);
  // As AsyncClient::Unsubscribe: the default subscription's conversations
  // are dropped at once; `done` runs after the UNSUBSCRIBE answer.
  void Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done);

  // A new subscription `id` with these callbacks (REQUIRES: id is not
  // kDefaultSub and was never used).
  void NewSubscription(uint64_t id, AsyncClient::MessageFn on_message, AsyncClient::LostFn on_lost);
  // As Subscription::Add and Subscription::Remove (client.h); one of them
  // at a time per subscription, in call order. An unknown (closed) id:
  // kCancelled.
  void Add(uint64_t sub, std::vector<std::string> conv_ids, std::map<std::string, int64_t> from,
           Done<bool> done);
  void Remove(uint64_t sub, std::vector<std::string> conv_ids, Done<bool> done);
  // Drops every membership of `sub` at once and forgets it.
  void CloseSubscription(uint64_t sub);
  // Stops timers and forgets everything; later answers are ignored.
  void Close();

 private:
  struct Handlers {
    AsyncClient::MessageFn on_message;
    AsyncClient::LostFn on_lost;
  };
  // What an on_message already posted checks when it runs: the membership
  // not dropped, and its message at or below the cut of a removal.
  struct Gate {
    int64_t cut = -1;  // -1: not removed
    bool dropped = false;
  };
  // One conversation's membership in one subscription.
  struct Member {
    std::shared_ptr<Handlers> handlers;
    std::shared_ptr<Gate> gate;
    uint64_t epoch = 0;  // the Add it belongs to
    int64_t start = 0;   // the last seq not to deliver
    bool ready = false;  // its SUBSCRIBE answered: it may take the queue
    int64_t miss_from = 0;
    int misses = 0;
    bool removed() const { return gate->cut >= 0; }
  };
  using Done2 = std::function<void(ClientResult<bool>)>;
  struct Sub {
    std::shared_ptr<Handlers> handlers;  // for its Adds (none for the default one)
    std::unique_ptr<ReceiveQueue> queue;
    // Per conversation its memberships in Add order; the first, once
    // ready, owns the queue's state of the conversation.
    std::unordered_map<std::string, std::deque<Member>> convs;
    // Add and Remove calls waiting for the one under way.
    std::deque<std::function<void(Done2)>> ops;
    bool busy = false;
  };
  // The server's subscription of one conversation, for its holders.
  enum class State { kIdle, kSubscribing, kLive, kLost };
  struct Raw {
    State state = State::kIdle;  // kIdle: no SUBSCRIBE sent yet
    std::set<uint64_t> subs;     // the subscriptions holding it
  };
  // A membership by its subscription, conversation and epoch.
  struct Key {
    uint64_t sub;
    std::string conv;
    uint64_t epoch;
  };

  // --- the calls (subscription_keeper.cc) ---
  Sub& MakeSub(uint64_t id, std::shared_ptr<Handlers> handlers);
  // Runs op now, or after the sub's Add or Remove under way; `done` gets
  // its result.
  void Serialize(uint64_t sub, std::function<void(Done2)> op, Done<bool> done);
  void RunNext(uint64_t sub);
  // Makes memberships of `sub` for conv_ids (the default subscription: one
  // it has gets `handlers`), sets their starts (MAX_SEQS for those not in
  // `from`) and subscribes them.
  void AddMembers(uint64_t sub, std::vector<std::string> conv_ids,
                  std::map<std::string, int64_t> from, std::shared_ptr<Handlers> handlers,
                  Done<bool> done);
  void Start(const std::vector<Key>& keys, std::vector<int64_t> starts,
             std::vector<std::string> again, Done<bool> done);
  // Drops the memberships `keys` name after a failed Add.
  void Abandon(const std::vector<Key>& keys);
  // Removes the memberships of conv_ids at cuts (MAX_SEQS).
  void CutMembers(uint64_t sub, std::vector<std::string> conv_ids, Done<bool> done);
  // Drops the membership of conv `epoch` at once (its posted callbacks too).
  void DropMember(uint64_t sub, const std::string& conv, uint64_t epoch);

  // --- memberships and the queue (subscription_keeper_fill.cc) ---
  Member* Find(const Key& key);
  Member* Front(uint64_t sub, const std::string& conv);
  // The membership of conv that is not removed, if any (the last one).
  Member* Holding(uint64_t sub, const std::string& conv);
  // Gives conv's queue state to its first membership (ready), afresh.
  void StartFront(uint64_t sub, const std::string& conv);
  // Ends the first membership of conv once it delivered through its cut,
  // and starts the next.
  void EndIfCut(uint64_t sub, const std::string& conv);
  void OnPush(const Message& m);
  void Deliver(uint64_t sub, const Message& m);
  void CheckMaxSeqs();
  void Pull(uint64_t sub, const std::string& conv, int64_t from, int64_t to);
  void OnPulled(uint64_t sub, const std::string& conv, int64_t from, int64_t to,
                const PullPage& page);
  void Tick();
  // Some subscription has a membership (a removed one pulls up to its cut
  // on ticks even once no conversation is held).
  bool HasMembers() const;
  void ArmTick();
  Clock::duration Backoff();

  // --- raw subscriptions (subscription_keeper_raw.cc) ---
  void Hold(uint64_t sub, const std::string& conv);
  // Lets go of convs for `sub`; unsubscribes those no subscription holds
  // and the server has; `done` (may be empty) after that answer.
  void Release(uint64_t sub, const std::vector<std::string>& convs, Done<bool> done);
  void UnsubscribeRaw(std::vector<std::string> convs, Done<bool> done);
  // Sends SUBSCRIBE for convs; on its answer they are live, with a
  // MAX_SEQS to follow.
  void SubscribeRaw(std::vector<std::string> convs, std::function<void(ClientResult<bool>)> then);
  void OnLost(std::vector<std::string> convs, const std::string& reason);
  void Resubscribe();
  // Posts on_lost once per callback set, for the holders of convs.
  void Tell(const std::vector<std::string>& convs, const std::string& reason);

  boost::asio::steady_timer timer_;
  Ops ops_;
  std::chrono::milliseconds backoff_initial_, backoff_max_, resync_every_;
  Clock::time_point resync_at_{};  // the next periodic MAX_SEQS
  std::unordered_map<uint64_t, Sub> subs_;
  std::unordered_map<std::string, Raw> raw_;
  uint64_t next_epoch_ = 1;
  std::unordered_set<std::string> max_unchecked_;  // live, with no MAX_SEQS answer since
  bool max_check_in_flight_ = false;
  bool resubscribe_in_flight_ = false;
  int failures_ = 0;  // consecutive failed re-subscriptions
  Clock::time_point resubscribe_at_{};
  bool ticking_ = false;
  bool closed_ = false;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace seqd::client::detail
