// KeyStatePool (server/core/key_state_pool.h): blocks of keys that left
// memory are reused for the next keys, not carved again.
#include "server/core/key_state_pool.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "server/core/key_state.h"

using seqd::allocator_internal::KeyState;
using seqd::allocator_internal::KeyStatePool;

TEST_CASE("KeyStatePool: freed blocks are reused before new ones are carved") {
  std::vector<void*> blocks;
  const size_t before = KeyStatePool::Carved();
  for (int i = 0; i < 100; ++i) blocks.push_back(KeyStatePool::Allocate(sizeof(KeyState)));
  const size_t carved = KeyStatePool::Carved() - before;
  CHECK(carved <= 100);  // fewer if earlier tests left free blocks; 0 in sanitizer builds
  for (void* b : blocks) {
    CHECK(reinterpret_cast<uintptr_t>(b) % alignof(KeyState) == 0);
    KeyStatePool::Free(b);
  }
  blocks.clear();
  for (int i = 0; i < 100; ++i) blocks.push_back(KeyStatePool::Allocate(sizeof(KeyState)));
  CHECK(KeyStatePool::Carved() - before == carved);  // all 100 from the free list
  for (void* b : blocks) KeyStatePool::Free(b);
}
