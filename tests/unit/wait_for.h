// Waiting in tests for something another thread does, by polling.
//
// Thread safety: WaitFor runs `pred` on the calling thread only; `pred` must
// be safe to run while the threads it watches work.
#pragma once

#include <chrono>
#include <thread>

namespace seqd {

// Polls `pred` every 5 ms until it holds (true) or `timeout` of real time
// passes (false).
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::steady_clock::duration timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace seqd
