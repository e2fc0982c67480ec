// The body of a streamed HTTP response (Server-Sent Events) on its way from
// whoever produces it (the event stream: bus listeners, store pulls,
// timers) to the connection that writes it (sse_session.h). Free of
// Beast and of sockets, so the stream logic is tested without either.
//
// Bytes queued and not yet written by the connection are bounded by
// `max_bytes`: Write() refuses what would pass the bound (a slow reader).
// WriteUnbounded() does not refuse: its producer keeps the queue bounded
// itself by waiting for the room callback before it writes more.
//
// Ending: the producer ends the stream with CloseAfter(bytes) (the
// connection writes what is queued, then those bytes, then closes), or the
// connection ends it (client gone, write error, server stop) with End().
// Either way the end callback runs once, and later writes are dropped.
//
// Thread safety: every method is safe from any thread. Callbacks run
// without the sink's lock held, on the calling thread: the wake callback
// on a producer's thread, the room and end callbacks on the connection's
// (or on the thread that calls End()). None may block.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace seqd {

class EventSink {
 public:
  explicit EventSink(size_t max_bytes) : max_bytes_(max_bytes) {}
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // --- producer --------------------------------------------------------------
  // Queues `bytes` unless the queue is not empty and would then pass
  // max_bytes (a slow reader), or the stream is closing or over: then
  // queues nothing and returns false.
  bool Write(std::string_view bytes) EXCLUDES(mu_);
  // Queues `bytes` whatever the bound (dropped only once closing or over).
  void WriteUnbounded(std::string_view bytes) EXCLUDES(mu_);
  // Queues `bytes` (may be empty) whatever the bound; the connection closes
  // after writing them. Later writes are dropped. Idempotent.
  void CloseAfter(std::string_view bytes) EXCLUDES(mu_);
  // Bytes queued and not yet written.
  size_t pending() const EXCLUDES(mu_);
  size_t max_bytes() const { return max_bytes_; }
  // True if the queue holds at most half of max_bytes.
  bool HasRoom() const EXCLUDES(mu_);
  // True until CloseAfter() or End().
  bool open() const EXCLUDES(mu_);
  // `fn` runs each time written bytes bring the queue from above half of
  // max_bytes to at most half. Set before the stream starts.
  void SetOnRoom(std::function<void()> fn) EXCLUDES(mu_);
  // `fn` runs once when the stream is over (End(), or the close after
  // CloseAfter() was written); at once if it is over already.
  void SetOnEnd(std::function<void()> fn) EXCLUDES(mu_);

  // --- connection ------------------------------------------------------------
  // `fn` runs when bytes (or the close) become available after Take()
  // returned kIdle. Set once, before the first Take().
  void SetWake(std::function<void()> fn) EXCLUDES(mu_);
  enum class Took { kBytes, kIdle, kClose };
  // kBytes: moves the queued bytes into `out` (appended); they count as
  // pending until Written(). kIdle: nothing queued (the wake callback runs
  // when there is). kClose: nothing queued and the producer closed: close
  // the connection, then call End().
  Took Take(std::string& out) EXCLUDES(mu_);
  // `n` bytes of what Take() gave have been written.
  void Written(size_t n) EXCLUDES(mu_);
  // The connection is gone or closing: runs the end callback (once), drops
  // the queue and every callback (breaking reference cycles through them).
  void End() EXCLUDES(mu_);

 private:
  // Queues `bytes` and notes when the queue passes half of max_bytes; the
  // wake callback to run once the lock is released (null if none).
  std::function<void()> AppendLocked(std::string_view bytes) REQUIRES(mu_);
  // The wake callback if the connection waits for one (then it no longer
  // does), else null; to run once the lock is released.
  std::function<void()> WakeIfIdleLocked() REQUIRES(mu_);

  const size_t max_bytes_;
  mutable Mutex mu_;
  std::string queue_ GUARDED_BY(mu_);
  size_t in_flight_ GUARDED_BY(mu_) = 0;  // taken, not yet written
  bool closing_ GUARDED_BY(mu_) = false;  // CloseAfter() called
  bool over_ GUARDED_BY(mu_) = false;     // End() called
  bool idle_ GUARDED_BY(mu_) = false;     // the connection waits for a wake
  bool above_half_ GUARDED_BY(mu_) = false;
  std::function<void()> wake_ GUARDED_BY(mu_);
  std::function<void()> on_room_ GUARDED_BY(mu_);
  std::function<void()> on_end_ GUARDED_BY(mu_);
};

}  // namespace seqd
