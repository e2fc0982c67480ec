// A RESP connection's replies in request order: one slot per command read,
// filled when its answer is known (at once, or when the allocator answers),
// and moved to the output only from the head, so pipelined replies keep
// their order whatever order the answers come in.
//
// Thread safety: none; one connection's (its strand).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/resp_codec.h"

namespace seqd {

// One reply position.
struct RespSlot {
  enum class State : uint8_t { kPending, kInteger, kText };
  State state = State::kPending;
  bool incrby = false;  // pending: head of an INCRBY (else of an INCR run)
  int64_t count = 0;    // pending head: INCR run length or INCRBY's n
  int64_t value = 0;    // kInteger
  std::string text;     // kText: the encoded reply
  std::chrono::steady_clock::time_point read_at{};  // pending head, with metrics: its input's read

  void Reset() {
    state = State::kPending;
    incrby = false;
    count = 0;
    text.clear();
  }
};

class RespReplyQueue {
 public:
  // Slots not yet moved to the output (unanswered, or behind one that is).
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  // A new pending slot at the tail; its sequence number.
  uint64_t Push() {
    if (count_ == ring_.size()) Grow();
    return head_ + count_++;
  }

  // The slot of sequence number `seq`. REQUIRES: it is queued.
  RespSlot& At(uint64_t seq) { return ring_[seq & (ring_.size() - 1)]; }

  // A reply known now: straight to `out` unless earlier ones wait.
  void Reply(std::string_view encoded, std::string& out) {
    if (count_ == 0) {
      out.append(encoded);
      return;
    }
    RespSlot& s = At(Push());
    s.text.assign(encoded);
    s.state = RespSlot::State::kText;
  }

  // Moves the filled slots at the head into `out`.
  void DrainInto(std::string& out) {
    while (count_ > 0) {
      RespSlot& s = At(head_);
      if (s.state == RespSlot::State::kPending) break;
      if (s.state == RespSlot::State::kInteger) {
        resp::AppendInteger(out, s.value);
      } else {
        out.append(s.text);
      }
      s.Reset();
      ++head_;
      --count_;
    }
  }

 private:
  void Grow() {
    std::vector<RespSlot> bigger(std::max<size_t>(16, ring_.size() * 2));
    for (size_t i = 0; i < count_; ++i) {
      const uint64_t seq = head_ + i;
      bigger[seq & (bigger.size() - 1)] = std::move(At(seq));
    }
    ring_.swap(bigger);
  }

  // Slot `seq` lives at ring_[seq & (size - 1)] (a power of two);
  // [head_, head_ + count_) are queued.
  std::vector<RespSlot> ring_;
  uint64_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace seqd
