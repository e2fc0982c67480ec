// Where a binary connection's pushed messages wait for the connection: the
// message service's writer threads queue PUSH frames here (never blocking on
// the connection), and the connection moves them to its output on its own
// thread. Past the connection's output cap the box drops pushes until the
// connection has dropped its subscriptions (PUSH_DROPPED), so a client that
// does not read costs bounded memory.
//
// Thread safety: Push() from any thread; Take(), Reopen() and SetUnsent()
// from the connection's thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>

#include "common/mutex.h"
#include "server/service/message_api.h"

namespace seqd {

class PushBox {
 public:
  // `schedule_drain`: queues the connection's drain on its thread (called
  // under the box's lock, at most once until Take()); it must not block.
  PushBox(size_t max_output, size_t max_frame, std::function<void()> schedule_drain)
      : max_output_(max_output),
        max_frame_(max_frame),
        schedule_drain_(std::move(schedule_drain)) {}

  // Queues `m`'s PUSH frame; over the cap (a frame past max_frame, or the
  // queue plus the connection's unsent bytes past max_output) drops it and
  // every later push until Reopen().
  void Push(const StoredMessage& m);

  // The frames queued so far; `*dropped`: the cap was passed (the caller
  // drops the subscriptions, then calls Reopen()).
  std::string Take(bool* dropped);

  // After the subscriptions are gone: pushes are queued again.
  void Reopen();

  // The connection's unsent output in bytes, as the cap counts it.
  void SetUnsent(size_t bytes) { unsent_.store(bytes, std::memory_order_relaxed); }

 private:
  const size_t max_output_;
  const size_t max_frame_;
  const std::function<void()> schedule_drain_;
  std::atomic<size_t> unsent_{0};

  Mutex mu_;
  std::string buf_ GUARDED_BY(mu_);       // push frames not yet taken
  bool posted_ GUARDED_BY(mu_) = false;   // a drain is scheduled
  bool dropped_ GUARDED_BY(mu_) = false;  // over the cap: pushes are discarded
};

}  // namespace seqd
