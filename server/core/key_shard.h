// One of the SegmentAllocator's kShardCount shards of keys: the keys in
// memory (key_table.h) and the keys recently found missing. Private to the
// allocator; in a header of its own so that the allocator's declarations
// can say which shard's lock they need (REQUIRES(shard.mu)).
//
// Thread safety: every field is guarded by `mu`: shared by lookups,
// exclusive to insert and erase. Lock order: a shard's mutex before a
// key's (KeyState::mu), never the reverse.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/clock.h"
#include "server/core/key_state.h"
#include "server/core/key_table.h"

namespace seqd::allocator_internal {

constexpr size_t kShardCount = 64;

// Lets the unknown-key map be searched with a string_view, without a copy.
struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};

struct Shard {
  mutable SharedMutex mu;
  // The keys in memory; each entry holds a reference (intrusive_ptr_add_ref).
  KeyTable<KeyState> keys GUARDED_BY(mu);
  // Keys the store recently said do not exist, with when to ask again.
  // Spares the store a query per request for a bad key. When full, the
  // oldest entry goes (never all at once: that would send a burst of
  // queries for keys just found missing to the store).
  struct Unknown {
    Clock::TimePoint ask_again;
    std::list<const std::string*>::iterator order;
  };
  std::unordered_map<std::string, Unknown, KeyHash, std::equal_to<>> unknown GUARDED_BY(mu);
  // The map's keys, oldest first.
  std::list<const std::string*> unknown_order GUARDED_BY(mu);

  // Not analysed for locks (destructors never are): nothing else runs then.
  ~Shard() {
    keys.ForEach([](KeyState* state) { intrusive_ptr_release(state); });
  }

  void ForgetUnknown(decltype(unknown)::iterator it) REQUIRES(mu) {
    unknown_order.erase(it->second.order);
    unknown.erase(it);
  }
};

}  // namespace seqd::allocator_internal
