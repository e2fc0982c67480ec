#include "server/http/stream/event_sink.h"

#include <algorithm>
#include <utility>

namespace seqd {

bool EventSink::Write(std::string_view bytes) {
  std::function<void()> wake;
  {
    MutexLock lock(mu_);
    if (closing_ || over_) return false;
    const size_t queued = queue_.size() + in_flight_;
    // An empty queue takes anything: an event larger than the bound is not
    // a slow reader.
    if (queued > 0 && queued + bytes.size() > max_bytes_) return false;
    wake = AppendLocked(bytes);
  }
  if (wake) wake();
  return true;
}

void EventSink::WriteUnbounded(std::string_view bytes) {
  std::function<void()> wake;
  {
    MutexLock lock(mu_);
    if (closing_ || over_) return;
    wake = AppendLocked(bytes);
  }
  if (wake) wake();
}

void EventSink::CloseAfter(std::string_view bytes) {
  std::function<void()> wake;
  {
    MutexLock lock(mu_);
    if (closing_ || over_) return;
    closing_ = true;
    queue_.append(bytes);
    wake = WakeIfIdleLocked();
  }
  if (wake) wake();
}

std::function<void()> EventSink::AppendLocked(std::string_view bytes) {
  queue_.append(bytes);
  if (queue_.size() + in_flight_ > max_bytes_ / 2) above_half_ = true;
  return WakeIfIdleLocked();
}

std::function<void()> EventSink::WakeIfIdleLocked() {
  if (!idle_) return nullptr;
  idle_ = false;
  return wake_;
}

size_t EventSink::pending() const {
  MutexLock lock(mu_);
  return queue_.size() + in_flight_;
}

bool EventSink::HasRoom() const {
  MutexLock lock(mu_);
  return queue_.size() + in_flight_ <= max_bytes_ / 2;
}

bool EventSink::open() const {
  MutexLock lock(mu_);
  return !closing_ && !over_;
}

void EventSink::SetOnRoom(std::function<void()> fn) {
  MutexLock lock(mu_);
  if (!over_) on_room_ = std::move(fn);
}

void EventSink::SetOnEnd(std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    if (!over_) {
      on_end_ = std::move(fn);
      return;
    }
  }
  fn();
}

void EventSink::SetWake(std::function<void()> fn) {
  MutexLock lock(mu_);
  if (!over_) wake_ = std::move(fn);
}

EventSink::Took EventSink::Take(std::string& out) {
  MutexLock lock(mu_);
  if (!queue_.empty()) {
    in_flight_ += queue_.size();
    if (out.empty()) {
      out.swap(queue_);
    } else {
      out.append(queue_);
    }
    queue_.clear();
    return Took::kBytes;
  }
  if (closing_ || over_) return Took::kClose;
  idle_ = true;
  return Took::kIdle;
}

void EventSink::Written(size_t n) {
  std::function<void()> room;
  {
    MutexLock lock(mu_);
    in_flight_ -= std::min(n, in_flight_);
    if (above_half_ && queue_.size() + in_flight_ <= max_bytes_ / 2) {
      above_half_ = false;
      room = on_room_;
    }
  }
  if (room) room();
}

void EventSink::End() {
  std::function<void()> end, wake, room;
  {
    MutexLock lock(mu_);
    if (over_) return;
    over_ = true;
    std::string().swap(queue_);
    end = std::move(on_end_);
    wake = std::move(wake_);
    room = std::move(on_room_);
    on_end_ = nullptr;
    wake_ = nullptr;
    on_room_ = nullptr;
  }
  // `wake` and `room` are destroyed outside the lock: they may own objects
  // whose destructors come back here.
  if (end) end();
}

}  // namespace seqd
