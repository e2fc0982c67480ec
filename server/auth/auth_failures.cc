#include "server/auth/auth_failures.h"

#include <algorithm>

namespace seqd {

AuthFailures::AuthFailures(AuthFailureOptions options, const Clock* clock)
    : options_(options), clock_(clock) {}

void AuthFailures::Configure(AuthFailureOptions options) { options_ = options; }

void AuthFailures::SetHooks(Hooks hooks) { hooks_ = std::move(hooks); }

AuthFailures::TimePoint AuthFailures::Now() const {
  return clock_ ? clock_->Now() : std::chrono::steady_clock::now();
}

std::string_view AuthFailures::AddressOf(std::string_view peer) {
  if (!peer.empty() && peer.front() == '[') {
    const size_t close = peer.find(']');
    if (close != std::string_view::npos) return peer.substr(1, close - 1);
  }
  const size_t colon = peer.rfind(':');
  if (colon == std::string_view::npos) return peer;
  return peer.substr(0, colon);
}

int AuthFailures::BlockedFor(std::string_view peer) {
  const TimePoint now = Now();
  if (now.time_since_epoch().count() >= latest_block_end_.load(std::memory_order_acquire)) {
    return 0;  // nobody is blocked: the common case, without a lock
  }
  const std::string_view address = AddressOf(peer);
  MutexLock lock(mu_);
  auto it = table_.find(std::string(address));
  if (it == table_.end() || it->second.blocked_until <= now) return 0;
  const auto left = it->second.blocked_until - now;
  const auto secs = std::chrono::ceil<std::chrono::seconds>(left).count();
  return static_cast<int>(std::max<int64_t>(1, secs));
}

void AuthFailures::CountThrottled(std::string_view interface) const {
  if (hooks_.throttled) hooks_.throttled(interface);
}

bool AuthFailures::RecordFailure(std::string_view peer) {
  if (hooks_.failure) hooks_.failure();
  if (options_.budget <= 0) return false;
  const TimePoint now = Now();
  const std::string address(AddressOf(peer));
  MutexLock lock(mu_);
  auto it = table_.find(address);
  if (it == table_.end()) {
    if (table_.size() >= options_.max_addresses) {
      SweepLocked(now);
      // Still full of live entries: forget an arbitrary one rather than
      // stop counting (memory stays bounded either way).
      if (table_.size() >= options_.max_addresses) table_.erase(table_.begin());
    }
    it = table_.emplace(address, Entry{}).first;
    it->second.window_start = now;
    it->second.next_backoff = options_.first_backoff;
  }
  Entry& e = it->second;
  if (e.blocked_until > now) return false;  // already blocked: not an attempt counted
  if (e.last_failure != TimePoint{} && now - e.last_failure >= options_.max_backoff) {
    e.next_backoff = options_.first_backoff;  // quiet long enough: forgiven
  }
  if (now - e.window_start >= options_.window) {
    e.window_start = now;
    e.failures = 0;
  }
  e.last_failure = now;
  if (++e.failures < options_.budget) return false;
  e.blocked_until = now + e.next_backoff;
  e.next_backoff = std::min(e.next_backoff * 2, options_.max_backoff);
  e.failures = 0;
  e.window_start = e.blocked_until;
  e.last_failure = e.blocked_until;  // the quiet spell that forgives starts at the block's end
  const int64_t end = e.blocked_until.time_since_epoch().count();
  int64_t latest = latest_block_end_.load(std::memory_order_relaxed);
  while (latest < end &&
         !latest_block_end_.compare_exchange_weak(latest, end, std::memory_order_release)) {
  }
  return true;
}

void AuthFailures::SweepLocked(TimePoint now) {
  for (auto it = table_.begin(); it != table_.end();) {
    const Entry& e = it->second;
    const bool idle = e.blocked_until <= now && now - e.window_start >= options_.window &&
                      now - e.last_failure >= options_.max_backoff;
    it = idle ? table_.erase(it) : std::next(it);
  }
}

void AuthFailures::Reset() {
  MutexLock lock(mu_);
  table_.clear();
  latest_block_end_.store(0, std::memory_order_release);
}

size_t AuthFailures::size() const {
  MutexLock lock(mu_);
  return table_.size();
}

}  // namespace seqd
