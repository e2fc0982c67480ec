// Runs of NEXT_IDS requests: consecutive requests of one key in one read of
// a binary connection, served by one take (as the RESP listener serves a
// run of INCRs). The dispatcher gathers a run while it handles a read's
// frames, takes the run's total count once, and gives each request its
// share of the IDs in the order the requests came: one allocator call, one
// counter update and one callback per run instead of per request.
//
// A closed run keeps its requests in a slot until its answer is written, so
// a run parked on a segment may wait while the next ones are gathered.
// Slots and their vectors are reused: no allocation once warm.
//
// Thread safety: none; the connection's strand owns it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace seqd {

// One request of a run: its id and the IDs it asked for.
struct NextIdsAsk {
  uint32_t request_id = 0;
  uint32_t count = 0;
};

class NextIdsRuns {
 public:
  // A run being gathered (Open'ed, not yet Closed).
  bool open() const { return open_ != kNone; }
  // The open run's key and the IDs its requests ask for in all. REQUIRES: open().
  std::string_view key() const { return key_; }
  int64_t total() const { return total_; }

  // REQUIRES: !open().
  void Open(std::string_view key, NextIdsAsk ask) {
    key_.assign(key);
    total_ = 0;
    if (free_.empty()) {
      free_.push_back(static_cast<uint32_t>(slots_.size()));
      slots_.emplace_back();
    }
    open_ = free_.back();
    free_.pop_back();
    slots_[open_].clear();
    Add(ask);
  }
  // REQUIRES: open().
  void Add(NextIdsAsk ask) {
    slots_[open_].push_back(ask);
    total_ += ask.count;
  }
  // Ends the open run: its slot, whose requests stay until Release. key()
  // and total() keep their values until the next Open. REQUIRES: open().
  uint32_t Close() {
    const uint32_t slot = open_;
    open_ = kNone;
    return slot;
  }

  // A closed run's requests, in the order they came. REQUIRES: `slot` came
  // from Close and was not released.
  std::span<const NextIdsAsk> asks(uint32_t slot) const { return slots_[slot]; }
  void Release(uint32_t slot) { free_.push_back(slot); }

  // Closed runs not yet released (tests).
  size_t in_flight() const { return slots_.size() - free_.size() - (open() ? 1 : 0); }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  std::string key_;
  int64_t total_ = 0;
  uint32_t open_ = kNone;
  std::vector<std::vector<NextIdsAsk>> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace seqd
