// An open-addressing hash table of pointers to objects that carry their own
// key (`T::key`: a std::string, or anything that converts to and compares
// with a std::string_view): 8 bytes a slot, where std::unordered_map costs
// a node of about 64 bytes and a bucket per entry. Linear probing;
// erasing shifts the entries after it back (no tombstones). Grows to keep
// at most 7/8 of the slots full; never shrinks.
//
// A slot keeps 16 bits of its entry's hash in the pointer's top bits (user
// space addresses on x86-64 and AArch64 Linux fit in 48 bits, checked on
// insert): a probe past another key's slot compares those, not the key,
// so a miss does not read every entry on its way (at 7/8 full a miss
// passes ~30 slots).
//
// Thread safety: none; the caller locks. The pointers are not owned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace seqd {

template <typename T>
class KeyTable {
 public:
  T* Find(std::string_view key) const {
    if (slots_.empty()) return nullptr;
    const size_t hash = Hash(key);
    const uint64_t tag = Tag(hash);
    for (size_t i = hash & Mask();; i = Next(i)) {
      const uint64_t slot = slots_[i];
      if (slot == 0) return nullptr;
      if ((slot & kTagMask) == tag && Item(slot)->key == key) return Item(slot);
    }
  }

  // REQUIRES: no entry has item->key. Throws std::invalid_argument for an
  // address past 48 bits.
  void Insert(T* item) {
    if (reinterpret_cast<uintptr_t>(item) & kTagMask) {
      throw std::invalid_argument("KeyTable: address past 48 bits");
    }
    if ((size_ + 1) * 8 > slots_.size() * 7) Grow();
    Place(item);
    ++size_;
  }

  // Removes the entry for `key`; false if there is none.
  bool Erase(std::string_view key) {
    if (slots_.empty()) return false;
    size_t hole = Home(key);
    for (;; hole = Next(hole)) {
      if (!slots_[hole]) return false;
      if (Item(slots_[hole])->key == key) break;
    }
    slots_[hole] = 0;
    --size_;
    // Move back each following entry whose home is not between the hole and
    // it (cyclically), so every entry stays reachable from its home.
    for (size_t i = Next(hole); slots_[i]; i = Next(i)) {
      const size_t home = Home(Item(slots_[i])->key);
      const bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (stays) continue;
      slots_[hole] = slots_[i];
      slots_[i] = 0;
      hole = i;
    }
    return true;
  }

  // Slots looked at to find `key` (present or not): 1 when it is at its
  // home. For tests of the hashing.
  size_t Probes(std::string_view key) const {
    if (slots_.empty()) return 0;
    size_t n = 1;
    for (size_t i = Home(key); slots_[i] && Item(slots_[i])->key != key; i = Next(i)) ++n;
    return n;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return slots_.size(); }

  // The first entry at or after slot `index % capacity()`, wrapping around;
  // nullptr if the table is empty.
  T* AtOrAfter(size_t index) const {
    if (size_ == 0) return nullptr;
    for (size_t i = index & Mask();; i = Next(i)) {
      if (slots_[i]) return Item(slots_[i]);
    }
  }

  // Calls f(T*) for every entry. `f` must not change the table.
  template <typename F>
  void ForEach(F&& f) const {
    for (uint64_t slot : slots_) {
      if (slot) f(Item(slot));
    }
  }

 private:
  // Mixed before masking: callers pick a table by the low bits of the same
  // std::hash (the allocator's shards, key_shard.h), so every key of one
  // table shares them; unmixed, only 1 slot in 64 would be a home and the
  // probes would run through long clusters.
  static size_t Hash(std::string_view key) {
    uint64_t h = std::hash<std::string_view>{}(key);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return static_cast<size_t>(h);
  }
  static constexpr int kTagShift = 48;
  static constexpr uint64_t kTagMask = ~uint64_t{0} << kTagShift;
  // The hash's top 16 bits (Home uses its low ones), in a slot's top bits.
  static uint64_t Tag(size_t hash) { return static_cast<uint64_t>(hash) & kTagMask; }
  static T* Item(uint64_t slot) { return reinterpret_cast<T*>(slot & ~kTagMask); }

  size_t Mask() const { return slots_.size() - 1; }
  size_t Home(std::string_view key) const { return Hash(key) & Mask(); }
  size_t Next(size_t i) const { return (i + 1) & Mask(); }

  void Place(T* item) {
    const size_t hash = Hash(item->key);
    size_t i = hash & Mask();
    while (slots_[i]) i = Next(i);
    slots_[i] = reinterpret_cast<uintptr_t>(item) | Tag(hash);
  }

  void Grow() {
    std::vector<uint64_t> old(slots_.empty() ? 16 : slots_.size() * 2, 0);
    old.swap(slots_);
    for (uint64_t slot : old) {
      if (slot) Place(Item(slot));
    }
  }

  // A power of two in size, or empty. 0: free; else the entry's address
  // and its hash's tag (Tag).
  std::vector<uint64_t> slots_;
  size_t size_ = 0;
};

}  // namespace seqd
