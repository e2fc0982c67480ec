// A per-address budget of failed authentications, with backoff: guessing
// token secrets costs an attacker time across connections, not only a
// connection every few tries.
//
// A failure is a secret given that matches no token. Failures are counted
// per client address (the peer's "ip:port" without the port; IPv6 too).
// Once an address reaches `budget` failures within `window`, it is blocked
// for a backoff (first `first_backoff`, doubled on each repeat up to
// `max_backoff`; back to the first after a quiet `max_backoff`). While
// blocked, every authentication attempt from it, right or wrong, is refused
// at once (IdentifyBy, server/auth/access.h). At most `max_addresses`
// addresses are remembered; expired entries are dropped first.
//
// Thread safety: every method is safe from any thread, except Configure()
// and SetHooks(), which must run before the listeners start. BlockedFor()
// takes no lock while no address is blocked (one atomic load and a clock
// read); RecordFailure() and BlockedFor() on a blocked server take a mutex
// held for a hash lookup (or, with the table full, one sweep).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"

namespace seqd {

struct AuthFailureOptions {
  int budget = 20;  // failures per window before a block; 0 turns blocking off
  Clock::Duration window = std::chrono::seconds(10);
  Clock::Duration first_backoff = std::chrono::seconds(1);
  Clock::Duration max_backoff = std::chrono::seconds(60);
  size_t max_addresses = 65536;
};

class AuthFailures {
 public:
  struct Hooks {
    std::function<void()> failure;                              // each failure recorded
    std::function<void(std::string_view interface)> throttled;  // each attempt refused
  };

  // `clock` null: the steady clock. A non-null clock must outlive this.
  explicit AuthFailures(AuthFailureOptions options = {}, const Clock* clock = nullptr);

  // Before serving only (not thread-safe).
  void Configure(AuthFailureOptions options);
  void SetHooks(Hooks hooks);
  const AuthFailureOptions& options() const { return options_; }

  // Whole seconds (at least 1) the address of `peer` stays blocked, or 0.
  int BlockedFor(std::string_view peer) EXCLUDES(mu_);
  // Counts one refused attempt of a blocked address (metrics hook).
  void CountThrottled(std::string_view interface) const;
  // Records one failure of `peer`'s address; true if it blocked the
  // address now (the caller audits that).
  bool RecordFailure(std::string_view peer) EXCLUDES(mu_);
  // Forgets every address (tests, operators).
  void Reset() EXCLUDES(mu_);
  // Addresses remembered now.
  size_t size() const EXCLUDES(mu_);

  // "1.2.3.4:80" -> "1.2.3.4"; "::1:80" and "[::1]:80" -> "::1"; a peer
  // without a port is returned as is.
  static std::string_view AddressOf(std::string_view peer);

 private:
  using TimePoint = Clock::TimePoint;
  struct Entry {
    TimePoint window_start{};
    int failures = 0;
    TimePoint blocked_until{};
    TimePoint last_failure{};  // or the end of the latest block, if later
    Clock::Duration next_backoff{};
  };
  TimePoint Now() const;
  // Drops entries neither blocked nor counting (table full).
  void SweepLocked(TimePoint now) REQUIRES(mu_);

  AuthFailureOptions options_;
  const Clock* clock_;
  Hooks hooks_;
  // The latest blocked_until of any entry (steady ticks): while now is past
  // it, no address is blocked and BlockedFor() takes no lock.
  std::atomic<int64_t> latest_block_end_{0};
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> table_ GUARDED_BY(mu_);
};

}  // namespace seqd
