// A key's name as the allocator holds it in memory (KeyState::key): 16
// bytes, where a std::string takes 32. Names of up to kInlineBytes bytes
// are stored in those 16 bytes (no heap allocation); longer ones, such as
// kMaxKeyLength (255) bytes, on the heap, allocated to their exact size.
// Any bytes are kept as given, NULs included.
//
// Layout: byte 15 says which: 0..kInlineBytes, the length of an inline
// name held in bytes 0..14; kOnHeap, a pointer in bytes 0..7 and a 32-bit
// length in bytes 8..11.
//
// Thread safety: immutable after construction; read from any thread.
// Not copyable or movable (a key's state never moves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace seqd::allocator_internal {

class KeyName {
 public:
  static constexpr size_t kInlineBytes = 15;

  // Throws std::length_error above 4 GiB (keys are at most 255 bytes).
  explicit KeyName(std::string_view name) {
    if (name.size() <= kInlineBytes) {
      std::memcpy(bytes_, name.data(), name.size());
      bytes_[kTagByte] = static_cast<char>(name.size());
      return;
    }
    if (name.size() > std::numeric_limits<uint32_t>::max()) throw std::length_error("key name");
    char* heap = new char[name.size()];
    std::memcpy(heap, name.data(), name.size());
    const auto size = static_cast<uint32_t>(name.size());
    std::memcpy(bytes_, &heap, sizeof heap);
    std::memcpy(bytes_ + sizeof heap, &size, sizeof size);
    bytes_[kTagByte] = static_cast<char>(kOnHeap);
  }
  ~KeyName() {
    if (OnHeap()) delete[] HeapPointer();
  }
  KeyName(const KeyName&) = delete;
  KeyName& operator=(const KeyName&) = delete;

  std::string_view view() const {
    if (!OnHeap()) return {bytes_, static_cast<unsigned char>(bytes_[kTagByte])};
    uint32_t size;
    std::memcpy(&size, bytes_ + sizeof(char*), sizeof size);
    return {HeapPointer(), size};
  }
  operator std::string_view() const { return view(); }  // NOLINT: used as one everywhere
  std::string str() const { return std::string(view()); }
  size_t size() const { return view().size(); }
  // True if held in the 16 bytes themselves (tests).
  bool Inline() const { return !OnHeap(); }

  friend bool operator==(const KeyName& a, std::string_view b) { return a.view() == b; }
  friend std::ostream& operator<<(std::ostream& out, const KeyName& name) {
    return out << name.view();
  }

 private:
  static constexpr size_t kTagByte = 15;
  static constexpr unsigned char kOnHeap = 0xFF;

  bool OnHeap() const { return static_cast<unsigned char>(bytes_[kTagByte]) == kOnHeap; }
  char* HeapPointer() const {
    char* p;
    std::memcpy(&p, bytes_, sizeof p);
    return p;
  }

  alignas(8) char bytes_[16];
};

static_assert(sizeof(KeyName) == 16);

}  // namespace seqd::allocator_internal
