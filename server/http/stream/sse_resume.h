// The seam between replay and live push for one conversation of an event
// stream: the same rules as the C++ client's subscription keeper
// (client/src/subscription_keeper.h), as a pure state machine.
//
// The stream subscribes FIRST, then learns its start (Start(last): deliver
// seqs above `last`), then pulls from the store until caught up, then
// delivers live messages. Every message above the start is delivered once,
// in seq order:
//  - a live message that arrives while a pull is due or in flight is kept
//    (at most `max_kept`; beyond that only its seq is noted: the store has
//    it) and delivered after the pull, unless the pull delivered it;
//  - a live message right after the last delivered one goes out at once;
//    one further ahead (a gap: a push lost across instances) is kept and
//    the gap pulled first;
//  - a complete pull (the store said nothing more) is the truth for every
//    seq known when it was asked: seqs it did not return are not visible
//    (below the conversation's min seq, outside the member's window) and
//    are skipped.
// With `live_from_store` (a member's window applies), live messages are
// never delivered as they come: each only says that seqs up to its own
// exist, and the store, asked with the member's window, delivers them.
//
// Thread safety: none (the event stream calls it under its lock).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "server/service/message_api.h"

namespace seqd {

class ConvResume {
 public:
  ConvResume(bool live_from_store, size_t max_kept)
      : from_store_(live_from_store), max_kept_(max_kept) {}

  // The start: messages above `last` are wanted. Once.
  void Start(int64_t last);
  bool started() const { return started_; }

  // A pushed message; appends to `out` what is to be delivered now.
  void OnLive(const StoredMessage& m, std::vector<StoredMessage>& out);

  // The store's max seq, learned some other way (a periodic check): seqs up
  // to it exist, as if pushed (a push lost across instances is pulled).
  void NoteMaxSeq(int64_t max_seq);

  // True if a pull is due and none is in flight.
  bool WantsPull() const { return started_ && need_pull_ && !pulling_; }
  // The caller asks the store now; returns the first seq to ask for.
  // REQUIRES: WantsPull().
  int64_t PullStarted();
  // The store's answer: `page` in ascending seq order, `more` if it was cut
  // (more messages follow). Appends what is to be delivered now.
  void OnPulled(const std::vector<StoredMessage>& page, bool more, std::vector<StoredMessage>& out);

  // The last seq delivered (or the start).
  int64_t last() const { return last_; }
  // True once caught up: no pull due or in flight.
  bool live() const { return started_ && !need_pull_ && !pulling_; }
  size_t kept() const { return kept_.size(); }

 private:
  void Deliver(const StoredMessage& m, std::vector<StoredMessage>& out);

  const bool from_store_;
  const size_t max_kept_;
  bool started_ = false;
  bool need_pull_ = false;  // the store has something we have not delivered
  bool pulling_ = false;
  int64_t last_ = 0;
  int64_t known_max_ = 0;  // the highest seq seen pushed
  int64_t covers_ = 0;     // known_max_ when the pull in flight was asked
  std::map<int64_t, StoredMessage> kept_;
};

}  // namespace seqd
