// An open-addressing hash table of pointers to objects that carry their own
// key (`T::key`: a std::string, or anything that converts to and compares
// with a std::string_view): 8 bytes a slot, where std::unordered_map costs
// a node of about 64 bytes and a bucket per entry. Linear probing;
// erasing shifts the entries after it back (no tombstones). Grows to keep
// at most 7/8 of the slots full; never shrinks.
//
// Thread safety: none; the caller locks. The pointers are not owned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace seqd {

template <typename T>
class KeyTable {
 public:
  T* Find(std::string_view key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(key);; i = Next(i)) {
      T* item = slots_[i];
      if (!item) return nullptr;
      if (item->key == key) return item;
    }
  }

  // REQUIRES: no entry has item->key.
  void Insert(T* item) {
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
      if (slots_[hole]->key == key) break;
    }
    slots_[hole] = nullptr;
    --size_;
    // Move back each following entry whose home is not between the hole and
    // it (cyclically), so every entry stays reachable from its home.
    for (size_t i = Next(hole); slots_[i]; i = Next(i)) {
      const size_t home = Home(slots_[i]->key);
      const bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
      if (stays) continue;
      slots_[hole] = slots_[i];
      slots_[i] = nullptr;
      hole = i;
    }
    return true;
  }

  // Slots looked at to find `key` (present or not): 1 when it is at its
  // home. For tests of the hashing.
  size_t Probes(std::string_view key) const {
    if (slots_.empty()) return 0;
    size_t n = 1;
    for (size_t i = Home(key); slots_[i] && slots_[i]->key != key; i = Next(i)) ++n;
    return n;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return slots_.size(); }

  // The first entry at or after slot `index % capacity()`, wrapping around;
  // nullptr if the table is empty.
  T* AtOrAfter(size_t index) const {
    if (size_ == 0) return nullptr;
    for (size_t i = index & (slots_.size() - 1);; i = Next(i)) {
      if (slots_[i]) return slots_[i];
    }
  }

  // Calls f(T*) for every entry. `f` must not change the table.
  template <typename F>
  void ForEach(F&& f) const {
    for (T* item : slots_) {
      if (item) f(item);
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
  size_t Home(std::string_view key) const { return Hash(key) & (slots_.size() - 1); }
  size_t Next(size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void Place(T* item) {
    size_t i = Home(item->key);
    while (slots_[i]) i = Next(i);
    slots_[i] = item;
  }

  void Grow() {
    std::vector<T*> old(slots_.empty() ? 16 : slots_.size() * 2, nullptr);
    old.swap(slots_);
    for (T* item : old) {
      if (item) Place(item);
    }
  }

  std::vector<T*> slots_;  // a power of two in size, or empty; nullptr: free
  size_t size_ = 0;
};

}  // namespace seqd
