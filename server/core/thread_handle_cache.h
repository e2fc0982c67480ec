// Each thread's recently used KeyHandles, so a take by name costs one small
// hash lookup and no lock: a direct-mapped table of kSlots entries per
// thread, tagged with the owner's id (an allocator's, unique per process).
//
// An entry may hold the state of a key that has left memory (it keeps that
// memory alive until replaced or the thread ends); the owner checks
// KeyFastPath::erased and re-resolves.
//
// Thread safety: each thread sees only its own table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "server/core/key_handle.h"

namespace seqd {

class ThreadHandleCache {
 public:
  static constexpr size_t kSlots = 64;

  // The calling thread's entry for (owner, key): `*fresh` true if it was
  // just claimed for them (its handle then names `key` and holds no state).
  // Always inlined: the take by name's hot path (SegmentAllocator::TryTake).
  [[gnu::always_inline]] static KeyHandle& Slot(uint64_t owner, std::string_view key, bool* fresh) {
    thread_local Entry table[kSlots];
    const Fingerprint f = FingerprintOf(key);
    Entry& e = table[f.Mix() % kSlots];
    // A key of up to 16 bytes is all in its fingerprint: no compare.
    *fresh =
        e.owner != owner || !(e.fingerprint == f) || (key.size() > 16 && e.handle.key() != key);
    if (*fresh) {
      e.owner = owner;
      e.fingerprint = f;
      e.handle = KeyHandle(key);
    }
    return e.handle;
  }

 private:
  // The length and the first and last bytes (fixed-size loads only).
  struct Fingerprint {
    uint64_t head = 0, tail = 0, size = 0;
    bool operator==(const Fingerprint&) const = default;
    size_t Mix() const {
      const uint64_t h = (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ size) * 0xBF58476D1CE4E5B9ull;
      return static_cast<size_t>(h ^ (h >> 31));
    }
  };
  struct Entry {
    uint64_t owner = 0;  // 0: unused (owner ids start at 1)
    Fingerprint fingerprint;
    KeyHandle handle;
  };

  static Fingerprint FingerprintOf(std::string_view key) {
    const char* p = key.data();
    const size_t n = key.size();
    Fingerprint f;
    f.size = n;
    if (n >= 8) {
      std::memcpy(&f.head, p, 8);
      std::memcpy(&f.tail, p + n - 8, 8);
    } else if (n >= 4) {
      uint32_t a = 0, b = 0;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      f.head = a;
      f.tail = b;
    } else if (n > 0) {
      f.head = static_cast<uint8_t>(p[0]) |
               static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8 |
               static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16;
    }
    return f;
  }
};

}  // namespace seqd
