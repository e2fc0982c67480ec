// SubscriptionKeeper: subscriptions that survive connection loss
// (ClientOptions::resubscribe). Internal to the client library.
//
// Contract towards the application, per subscribed conversation:
//   - on_message sees every message whose seq is above the conversation's
//     max seq when Subscribe was called, in seq order, each exactly once:
//     no hole, no duplicate, across lost connections, server restarts and
//     PUSH_DROPPED;
//   - on_lost(convs, reason) tells that pushes stopped; the keeper
//     re-subscribes by itself (jittered backoff, without end) and pulls
//     what was missed. on_lost runs once more, with a reason that starts
//     "gave up", only if the server refuses the re-subscription itself
//     (e.g. PERMISSION_DENIED); nothing of those conversations follows.
//
// How: a ReceiveQueue holds each conversation's last delivered seq. Pushes
// are offered to it; a gap is pulled (PULL_RANGE). After every (re)subscribe
// answer, a MAX_SEQS tells the queue what exists, so messages sent while no
// subscription was live are pulled even if no push follows; and every
// `resync_every` (0: never) a MAX_SEQS of every live conversation catches a
// push lost with nothing after it (cluster mode: an owner move). Seqs the server
// no longer has (below a conversation's min seq) are skipped once three
// pulls of the range, at least retry_after apart, came back without them.
//
// Thread safety: none; every member runs on the client's strand (the Ops'
// callbacks must run there too). Application callbacks go through
// Ops::post, never run inside the keeper.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
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

  // As AsyncClient::Subscribe. `done` runs once the server answered the
  // first SUBSCRIBE (true), or with the error of MAX_SEQS or SUBSCRIBE.
  void Subscribe(std::vector<std::string> conv_ids, AsyncClient::MessageFn on_message,
                 AsyncClient::LostFn on_lost, Done<bool> done);
  // Forgets the conversations at once (no callback of theirs runs after the
  // ones already posted), then unsubscribes on the server.
  void Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done);
  // Stops timers and forgets everything; later answers are ignored.
  void Close();

 private:
  struct Handlers {
    AsyncClient::MessageFn on_message;
    AsyncClient::LostFn on_lost;
  };
  enum class State { kStarting, kSubscribing, kLive, kLost };
  struct Conv {
    std::shared_ptr<Handlers> handlers;
    State state = State::kStarting;
    uint64_t epoch = 0;  // which Subscribe call this entry belongs to
    int64_t miss_from = 0;
    int misses = 0;
  };
  using Epochs = std::vector<std::pair<std::string, uint64_t>>;

  bool Current(const std::string& conv, uint64_t epoch) const;
  void SubscribeRaw(const Epochs& convs, std::function<void(ClientResult<bool>)> then);
  void OnPush(Message m);
  void OnLost(std::vector<std::string> convs, const std::string& reason);
  void Resubscribe();
  void CheckMaxSeqs();
  void Pull(const std::string& conv, int64_t from, int64_t to);
  void OnPulled(const std::string& conv, int64_t from, int64_t to, const PullPage& page);
  void Deliver(const Message& m);
  void Tell(std::vector<std::string> convs, const std::string& reason);
  void Forget(const std::string& conv);
  void Tick();
  void ArmTick();
  Clock::duration Backoff();

  boost::asio::steady_timer timer_;
  Ops ops_;
  std::chrono::milliseconds backoff_initial_, backoff_max_, resync_every_;
  Clock::time_point resync_at_{};  // the next periodic MAX_SEQS
  ReceiveQueue queue_;
  std::unordered_map<std::string, Conv> convs_;
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
