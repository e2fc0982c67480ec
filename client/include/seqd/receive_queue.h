// seqd::client::ReceiveQueue: in-order, exactly-once delivery of a conversation's
// messages from an unreliable feed (pushes that may be lost, duplicated or
// reordered), with gap filling by pull. Pure logic: no I/O, no threads.
//
// The local_seq rule: per conversation the queue holds local_seq, the last
// seq delivered. Offer(m):
//   - m.seq <= local_seq, or a seq already held: a duplicate, dropped;
//   - m.seq == local_seq + 1: delivered, then every held message that
//     follows without a gap;
//   - otherwise (a gap): m is held (at most max_held per conversation; past
//     that it is dropped and fetched again later) and the first missing
//     range is asked for ONCE through request_pull(conv, from, to); asked
//     again only after retry_after with no answer (Tick() or the next
//     Offer/OnPulled checks, using the injected clock).
// OnPulled(messages) feeds a pull's answer (any order, any conversation).
// NoteMaxSeq(conv, max) tells the queue a seq exists (from a sync or a
// MAX_SEQS answer), so a lost last message is asked for too.
//
// A conversation never seen starts at local_seq 0 unless SetLocalSeq says
// otherwise (e.g. the read position after a login sync).
//
// Thread safety: none; use one queue from one thread (or under your lock).
// Callbacks run inside the calling method; they may not call back into the
// queue.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "seqd/message.h"

namespace seqd::client {

class ReceiveQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using DeliverFn = std::function<void(const Message&)>;
  using RequestPullFn = std::function<void(const std::string& conv_id, int64_t from, int64_t to)>;

  struct Options {
    std::chrono::milliseconds retry_after{2000};  // re-ask a range unanswered this long
    size_t max_held = 1000;                       // held messages per conversation
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
  };

  ReceiveQueue(DeliverFn deliver, RequestPullFn request_pull);
  ReceiveQueue(DeliverFn deliver, RequestPullFn request_pull, Options options);

  // Sets where a conversation starts (only forward; held messages at or
  // below it are dropped, and those that follow are delivered).
  void SetLocalSeq(const std::string& conv_id, int64_t local_seq);
  int64_t local_seq(const std::string& conv_id) const;
  // Drops everything known of a conversation (it starts again at 0).
  void Forget(const std::string& conv_id);

  void Offer(const Message& message);
  void OnPulled(const std::vector<Message>& messages);
  void NoteMaxSeq(const std::string& conv_id, int64_t max_seq);
  // Re-asks every range whose request has timed out.
  void Tick();

  size_t held(const std::string& conv_id) const;
  // The range asked for and not yet filled, if any.
  std::optional<std::pair<int64_t, int64_t>> pending_request(const std::string& conv_id) const;

 private:
  struct Conv {
    int64_t local_seq = 0;
    int64_t max_seen = 0;  // highest seq known to exist
    std::map<int64_t, Message> held;
    bool asked = false;
    int64_t ask_from = 0, ask_to = 0;
    Clock::time_point asked_at{};
  };

  // Returns true if the message was new.
  bool Accept(Conv& c, const Message& m);
  void Drain(Conv& c);
  // Asks for the first gap if there is one and no live request covers it.
  void MaybeAsk(const std::string& conv_id, Conv& c, bool force);

  DeliverFn deliver_;
  RequestPullFn request_pull_;
  Options options_;
  std::unordered_map<std::string, Conv> convs_;
};

}  // namespace seqd::client
