// A pull that waits: GET /conversations/{c}/messages?from=N&wait_ms=W
// (docs/http-api.md, "Long-poll"). Answers as soon as the pull finds a
// message (at or above N, in the member's window with ?user=), or with the
// pull at the deadline (an empty page), or at once at server shutdown.
//
// It subscribes FIRST, then pulls: a message committed between the two is
// pushed, so it wakes the wait. While waiting nothing is held but the
// subscription, a timer on the Clock and a limits slot: no database or
// writer thread.
//
// Thread safety: LongPoll::Start may be called from any thread; `done` runs
// exactly once, on a reader, writer or timer thread (or inline on a refusal).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/error.h"
#include "server/http/stream/stream_limits.h"
#include "server/service/message_api.h"

namespace seqd {

class Clock;
class StreamCounters;

struct LongPollDeps {
  MessageApi& messages;                  // subscriptions and pulls
  Clock* clock = nullptr;                // null: no waiting (answers at once)
  std::shared_ptr<StreamLimits> limits;  // null: no limits
  StreamCounters* metrics = nullptr;
};

inline constexpr int64_t kMaxLongPollWaitMs = 30000;

// Pulls `request`, waiting up to `wait` for a message if the first pull is
// empty. `token`: the limits' key ("" when tokens are off). Over a limit:
// kResourceExhausted.
void LongPull(const LongPollDeps& deps, PullRequest request, std::chrono::milliseconds wait,
              std::string_view token, MessageCallback<MessagePage> done);

}  // namespace seqd
