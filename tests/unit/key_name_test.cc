// KeyName (server/core/key_name.h): a key's name in 16 bytes, short names
// inline, longer ones on the heap; and the KeyState it keeps small.
#include "server/core/key_name.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <new>
#include <sstream>
#include <string>

#include "server/core/key_rules.h"
#include "server/core/key_state.h"

using seqd::kMaxKeyLength;
using seqd::allocator_internal::KeyName;
using seqd::allocator_internal::KeyState;

TEST_CASE("KeyName: names of up to 15 bytes are inline, longer ones on the heap, all intact") {
  for (size_t n = 0; n <= kMaxKeyLength; ++n) {
    std::string name;
    for (size_t i = 0; i < n; ++i)
      name.push_back("abcdefghijklmnopqrstuvwxyz0123456789_-.:@"[i % 41]);
    const KeyName k(name);
    CAPTURE(n);
    CHECK(k.Inline() == (n <= KeyName::kInlineBytes));
    CHECK(k.size() == n);
    CHECK(k.view() == name);
    CHECK(k == name);
    CHECK(k.str() == name);
    CHECK(static_cast<std::string_view>(k) == name);
  }
}

TEST_CASE("KeyName: exactly at the boundary, one past it, and the longest key") {
  const std::string fifteen(15, 'x'), sixteen(16, 'y'), longest(kMaxKeyLength, 'z');
  const KeyName a(fifteen), b(sixteen), c(longest);
  CHECK(a.Inline());
  CHECK(a.view() == fifteen);
  CHECK_FALSE(b.Inline());
  CHECK(b.view() == sixteen);
  CHECK_FALSE(c.Inline());
  CHECK(c.view() == longest);
  CHECK_FALSE(b == std::string_view(sixteen).substr(0, 15));  // a prefix is not the name
  std::ostringstream out;
  out << a << '|' << c;
  CHECK(out.str() == fifteen + "|" + longest);
}

TEST_CASE("KeyName: bytes are kept as given, the last inline byte included") {
  // The allocator never sees NULs (keys are validated before), but the
  // length is stored, not found by scanning.
  const std::string with_nul("ab\0cd\0\0\0\0\0\0\0\0\0\0", 15);
  const KeyName k(with_nul);
  CHECK(k.Inline());
  CHECK(k.view() == with_nul);
  const KeyName empty("");
  CHECK(empty.size() == 0);
}

TEST_CASE("KeyState: 160 bytes, the cursor word a cache line away from what takes read") {
  // Memory per key held (bench/key_memory_bench.sh). A change that grows KeyState must be
  // deliberate (bench/results/memory-per-key.md).
  CHECK(sizeof(KeyState) == 160);
  alignas(KeyState) unsigned char storage[sizeof(KeyState)];
  auto* s = new (storage) KeyState("k");
  const auto at = [&](const void* field) {
    return static_cast<const unsigned char*>(field) - reinterpret_cast<const unsigned char*>(s);
  };
  // Takes read the cursor, the epoch and the erased flag (KeyFastPath).
  const ptrdiff_t read_end = at(&s->erased) + 1;
  CHECK(at(&s->cursor) == 0);
  CHECK(at(&s->cursor_word) - read_end >= 64);
  CHECK(at(&s->key) < at(&s->cursor_word));
  s->~KeyState();
}
