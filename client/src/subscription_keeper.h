// SubscriptionKeeper: subscriptions that survive connection loss
// (ClientOptions::resubscribe), to conversations added and removed as
// they go. Internal to the client library.
//
// Contract towards the application, per subscription and conversation:
//   - on_message sees every message whose seq is above the conversation's
//     start (the seq given to Add, else its max seq when Add was called),
//     in seq order, each exactly once: no hole, no duplicate, across lost
//     connections, server restarts and PUSH_DROPPED;
//   - on_lost(convs, reason) tells that pushes stopped; the keeper
//     re-subscribes by itself (jittered backoff, without end) and pulls
//     what was missed. on_lost runs once more, with a reason that starts
//     "gave up", only if the server refuses the re-subscription itself
//     (e.g. PERMISSION_DENIED); nothing of those conversations follows;
//   - once Remove ran, no on_message of those conversations runs (those
//     already posted are dropped when they run).
//
// How: subscriptions (by id; id 0 is AsyncClient::Subscribe's, whose
// callbacks are per conversation) hold members, one per conversation,
// and each has its own ReceiveQueue holding each conversation's last
// delivered seq. The server side is one raw subscription per conversation,
// shared by its members: SUBSCRIBE for each Add (the server ignores a
// conversation subscribed twice), UNSUBSCRIBE when the last member goes.
// Pushes are offered to every member's queue; a gap is pulled
// (PULL_RANGE). After every SUBSCRIBE answer, a MAX_SEQS tells the queues
// what exists, so messages sent while no subscription was live are pulled
// even if no push follows; and every `resync_every` (0: never) a MAX_SEQS
// of every live conversation catches a push lost with nothing after it
// (cluster mode: an owner move). Seqs the server no longer has (below a
// conversation's min seq) are skipped once three pulls of the range, at
// least retry_after apart, came back without them.
//
// Files: subscription_keeper.cc (members and the raw subscriptions),
// subscription_keeper_fill.cc (delivery, MAX_SEQS, pulls, the tick).
//
// Thread safety: none; every member runs on the client's strand (the Ops'
// callbacks must run there too). Application callbacks go through
// Ops::post, never run inside the keeper.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
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

  // A new subscription `id` with these callbacks (REQUIRES: id is not
  // kDefaultSub and was never used).
  void NewSubscription(uint64_t id, AsyncClient::MessageFn on_message, AsyncClient::LostFn on_lost);
  // As Subscription::Add (client.h). An unknown (closed) id: kCancelled.
  void Add(uint64_t sub, std::vector<std::string> conv_ids, std::map<std::string, int64_t> from,
           Done<bool> done);
  // Forgets the conversations of `sub` at once (no callback of theirs runs
  // from now on), then unsubscribes those no subscription holds any more;
  // `done` runs after that answer.
  void Remove(uint64_t sub, std::vector<std::string> conv_ids, Done<bool> done);
  // Removes every conversation of `sub` and forgets it.
  void CloseSubscription(uint64_t sub);
  // Stops timers and forgets everything; later answers are ignored.
  void Close();

 private:
  struct Handlers {
    AsyncClient::MessageFn on_message;
    AsyncClient::LostFn on_lost;
  };
  // One conversation of one subscription.
  struct Member {
    std::shared_ptr<Handlers> handlers;
    uint64_t epoch = 0;    // the Add it belongs to
    bool started = false;  // its start is set: pushes and pulls reach its queue
    int64_t miss_from = 0;
    int misses = 0;
  };
  struct Sub {
    std::shared_ptr<Handlers> handlers;  // for its Adds (none for the default one)
    std::unique_ptr<ReceiveQueue> queue;
    std::unordered_map<std::string, Member> members;
  };
  // The server's subscription of one conversation, for its members.
  enum class State { kIdle, kSubscribing, kLive, kLost };
  struct Raw {
    State state = State::kIdle;  // kIdle: no SUBSCRIBE sent yet
    std::set<uint64_t> subs;     // the subscriptions with a member
  };
  // A member by its subscription, conversation and epoch.
  struct Key {
    uint64_t sub;
    std::string conv;
    uint64_t epoch;
  };

  // --- members and raw subscriptions (subscription_keeper.cc) ---
  Sub& MakeSub(uint64_t id, std::shared_ptr<Handlers> handlers);
  // The member `key` names, if it is still the current one.
  Member* Current(const Key& key);
  // Makes members of `sub` for conv_ids (`handlers` replace those of one
  // that exists: only the default subscription does that), sets their
  // starts (MAX_SEQS for those not in `from`) and subscribes them.
  void AddMembers(uint64_t sub, std::vector<std::string> conv_ids,
                  std::map<std::string, int64_t> from, std::shared_ptr<Handlers> handlers,
                  Done<bool> done);
  // Sets the starts of the members `keys` name (those still current) and
  // subscribes them with `again`; `done` gets the SUBSCRIBE's answer.
  void Start(const std::vector<Key>& keys, std::vector<int64_t> starts,
             std::vector<std::string> again, Done<bool> done);
  // Drops the members `keys` name (those still current) after a failed Add.
  void Abandon(const std::vector<Key>& keys);
  // Drops the member of `sub` in conv, if any; true if it was the last
  // member and conv is subscribed or subscribing (an UNSUBSCRIBE is due).
  bool DropMember(uint64_t sub, const std::string& conv);
  void Unsubscribe(std::vector<std::string> convs, Done<bool> done);
  // Sends SUBSCRIBE for convs; on its answer they are live, with a
  // MAX_SEQS to follow.
  void SubscribeRaw(std::vector<std::string> convs, std::function<void(ClientResult<bool>)> then);
  void OnLost(std::vector<std::string> convs, const std::string& reason);
  void Resubscribe();
  // Posts on_lost once per callback set, for the started members of convs.
  void Tell(const std::vector<std::string>& convs, const std::string& reason);

  // --- delivery and gap filling (subscription_keeper_fill.cc) ---
  void OnPush(const Message& m);
  void Deliver(uint64_t sub, const Message& m);
  void CheckMaxSeqs();
  void Pull(uint64_t sub, const std::string& conv, int64_t from, int64_t to);
  void OnPulled(uint64_t sub, const std::string& conv, int64_t from, int64_t to,
                const PullPage& page);
  void Tick();
  void ArmTick();
  Clock::duration Backoff();

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
