// Calendar time in unix milliseconds, behind an interface so tests can move
// it backwards and forwards by hand. (Clock in server/base/clock.h is the
// steady clock for deadlines and timers; this one is the time IDs carry.)
//
// Thread safety: NowMs() is safe from any thread; so are ManualWallClock's
// setters.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace seqd {

class WallClock {
 public:
  virtual ~WallClock() = default;
  // Unix microseconds (the generator times its wait for the next
  // millisecond with them).
  virtual int64_t NowUs() const = 0;
  // Unix milliseconds. REQUIRES: a time after 1970.
  int64_t NowMs() const { return NowUs() / 1000; }
};

class SystemWallClock final : public WallClock {
 public:
  int64_t NowUs() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// For tests: shows whatever it was last set to.
class ManualWallClock final : public WallClock {
 public:
  explicit ManualWallClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowUs() const override { return now_ms_.load() * 1000; }
  void Set(int64_t now_ms) { now_ms_.store(now_ms); }
  void Advance(int64_t by_ms) { now_ms_.fetch_add(by_ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace seqd
