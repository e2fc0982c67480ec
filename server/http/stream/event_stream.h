// One Server-Sent Events stream (docs/http-api.md, "Server-Sent Events"):
// its conversations' subscriptions, the pulls that replay what the client
// missed, the seam between the two (server/http/stream/sse_resume.h), the
// heartbeat, and the bytes (server/http/stream/sse_wire.h) written to the
// connection's sink (server/http/stream/event_sink.h).
//
// Life: Create() subscribes (through the KeyRouter, so in cluster mode the
// owner's pushes are relayed here); Run() attaches the sink and starts:
// the `retry:` line, the start points of conversations without one
// (MAX_SEQS: "from now"), the replay, then live pushes. The stream ends
// when the sink ends (client gone, server stop), after a slow reader's
// `event: dropped`, or when the store fails a pull (the client reconnects
// with its Last-Event-ID and loses nothing). Ending drops the
// subscriptions and the limits slot.
//
// Flow: replayed pages are queued whatever the sink's bound, but the next
// pull is asked only once the sink is at most half full; live messages and
// heartbeats are queued within the bound, and one that does not fit ends
// the stream as a slow reader.
//
// Thread safety: every method is safe from any thread. Bus listeners (on
// writer threads), pull answers (reader threads), timers and the sink's
// callbacks only take the stream's lock and queue bytes: nothing blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/auth/access.h"
#include "server/http/stream/sse_resume.h"
#include "server/http/stream/stream_limits.h"
#include "server/service/message_api.h"

namespace seqd {

class Clock;
class EventSink;
class StreamCounters;

struct EventStreamOptions {
  std::chrono::milliseconds retry{3000};       // the `retry:` hint
  std::chrono::milliseconds heartbeat{15000};  // `: hb` every this long
  size_t pull_limit = 100;                     // messages per replay pull
  // With each heartbeat, ask the store for the max seqs (one read per
  // stream): in cluster mode a push relayed from another instance can be
  // lost around an owner change, and a quiet conversation would not show
  // the gap until its next message.
  bool check_max_on_heartbeat = false;
  size_t max_kept = 256;  // live messages kept per conversation while pulling (beyond: pulled)
};

// One conversation of a stream and where it starts.
struct StreamConv {
  std::string conv_id;
  std::optional<int64_t> last;  // deliver seqs above it; none: from now on
};

class EventStream : public std::enable_shared_from_this<EventStream> {
 public:
  struct Deps {
    MessageApi& messages;      // subscriptions, pulls and max seqs
    Clock* clock = nullptr;    // heartbeats; null: none
    StreamCounters* metrics = nullptr;
  };

  // Subscribes to every conversation. `multi`: ids are resume tokens and
  // the data carries conv_id (GET /events). `user`: pulls keep to this
  // member's window, and live messages are delivered through the store.
  // An error (a bad conversation id) before anything was sent.
  static Result<std::shared_ptr<EventStream>> Create(Deps deps, EventStreamOptions options,
                                                     std::vector<StreamConv> convs, bool multi,
                                                     std::optional<std::string> user);
  ~EventStream();

  // Starts writing to `sink`, holding `slot` until the stream ends. Once.
  void Run(std::shared_ptr<EventSink> sink, std::unique_ptr<StreamLimits::Slot> slot);

  // Ends the stream now (the sink closes after what is queued).
  void Close();

  // After every tokens reload of `auth`, checks `access` (the request's)
  // again: once its token is gone or no longer has `permission` on one of
  // the stream's conversations, the stream ends with `event: dropped`
  // (reason "unauthenticated" or "permission_denied"). Call before Run();
  // `auth` must outlive the stream.
  void EndWhenRevoked(const Authenticator* auth, Access access, Permission permission)
      EXCLUDES(mu_);

 private:
  struct Conv {
    std::string id;
    std::optional<int64_t> start;
    ConvResume resume;
    int64_t sent = 0;  // the last seq queued to the sink
    std::unique_ptr<Subscription> subscription;
  };

  // A pull to ask of the store once the lock is released (its answer may
  // come inline, on the asking thread).
  struct PullAsk {
    size_t conv;
    PullRequest request;
  };

  EventStream(Deps deps, EventStreamOptions options, bool multi, std::optional<std::string> user);

  void OnLive(size_t conv, const StoredMessage& m) EXCLUDES(mu_);
  void OnStartPoints(Result<std::vector<int64_t>> max_seqs) EXCLUDES(mu_);
  void StartLocked(Result<std::vector<int64_t>> max_seqs, std::vector<PullAsk>& asks) REQUIRES(mu_);
  void Pump() EXCLUDES(mu_);
  void Ask(std::vector<PullAsk> asks) EXCLUDES(mu_);
  void OnPulled(size_t conv, Result<MessagePage> page) EXCLUDES(mu_);
  void Heartbeat() EXCLUDES(mu_);
  void OnMaxSeqs(Result<std::vector<int64_t>> max_seqs) EXCLUDES(mu_);
  // Asks the store for the max seqs of `convs`; `then` gets the answer
  // (maybe inline, on this thread). Not under the lock.
  using MaxSeqsHandler = void (EventStream::*)(Result<std::vector<int64_t>>);
  void AskMaxSeqs(std::vector<std::string> convs, MaxSeqsHandler then) EXCLUDES(mu_);
  void ArmHeartbeat();
  // The pulls due that the sink has room for.
  void DuePullsLocked(std::vector<PullAsk>& asks) REQUIRES(mu_);
  // Queues message events; `bounded`: a live delivery, refused when full.
  void SendLocked(size_t conv, const std::vector<StoredMessage>& messages, bool bounded)
      REQUIRES(mu_);
  std::string LastIdLocked() const REQUIRES(mu_);
  void DroppedLocked() REQUIRES(mu_);
  void EndLocked() REQUIRES(mu_);
  // The sink is over: drop subscriptions and the slot.
  void OnEnd() EXCLUDES(mu_);
  // EndWhenRevoked's check, after a reload.
  void Recheck() EXCLUDES(mu_);

  const Deps deps_;
  const EventStreamOptions options_;
  const bool multi_;
  const std::optional<std::string> user_;
  mutable Mutex mu_;
  std::vector<Conv> convs_ GUARDED_BY(mu_);
  std::shared_ptr<EventSink> sink_ GUARDED_BY(mu_);
  std::unique_ptr<StreamLimits::Slot> slot_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool closing_ GUARDED_BY(mu_) = false;  // the sink closes after what is queued
  bool ended_ GUARDED_BY(mu_) = false;
  // EndWhenRevoked's: the reload watch and what it checks.
  const Authenticator* auth_ GUARDED_BY(mu_) = nullptr;
  std::optional<Access> access_ GUARDED_BY(mu_);
  Permission permission_ GUARDED_BY(mu_){};
  std::unique_ptr<Authenticator::ReloadWatch> reload_watch_ GUARDED_BY(mu_);
  std::string scratch_ GUARDED_BY(mu_);
};

}  // namespace seqd
