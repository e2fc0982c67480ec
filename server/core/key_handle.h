// A key resolved once, for takes from memory without a lookup by name
// (SegmentAllocator::Handle, TryTake, Take(KeyHandle&)), and what such a
// take reads of the key.
#pragma once

#include <atomic>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "server/core/segment_cursor.h"

namespace seqd {

// What a take from memory reads without the key's lock (the rest of the
// key's state is private to the allocator). Written only under that lock.
// The cursor's word, which takes write, is not here: the allocator keeps it
// at least a cache line away (KeyHandle points to it).
struct KeyFastPath {
  SegmentCursor cursor;  // the current segment
  // Cluster mode: the epoch the buffers belong to (0: none yet, or fenced).
  std::atomic<int64_t> epoch{0};
  std::atomic<uint32_t> refs{0};    // references (boost::intrusive_ptr)
  std::atomic<bool> erased{false};  // left memory; later requests load it again
  // Last: KeyState (key_state.h) puts its first bytes in the 3 bytes of
  // padding after it.
};

// For boost::intrusive_ptr; the last reference deletes the key's state.
void intrusive_ptr_add_ref(KeyFastPath* key);
void intrusive_ptr_release(KeyFastPath* key);

// A key resolved once (SegmentAllocator::Handle), for takes without a
// lookup by name. Copyable and cheap to keep; holds the key's in-memory
// state alive, not in memory. Thread safety: as a value (one writer).
class KeyHandle {
 public:
  KeyHandle() = default;
  // Names `key` without resolving it: the first Take(KeyHandle&) does.
  explicit KeyHandle(std::string_view key) : key_(key) {}
  const std::string& key() const { return key_; }

 private:
  friend class SegmentAllocator;
  std::string key_;
  boost::intrusive_ptr<KeyFastPath> fast_;  // null: not in memory when resolved
  CursorWord* word_ = nullptr;              // fast_'s cursor word, kept alive by fast_
};

}  // namespace seqd
