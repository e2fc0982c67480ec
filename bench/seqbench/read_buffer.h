// The bytes a load connection has read and not yet parsed.
//
// Unlike std::vector<char>::resize, making room for a read does not zero
// it: seqbench reads into 64 KiB of room tens of thousands of times a
// second, and zeroing that was a tenth of its CPU.
//
// Thread safety: none; one connection's strand uses it.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace seqd::tools {

class ReadBuffer {
 public:
  const char* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  // The bytes from `from` on. Precondition: from <= size().
  std::string_view From(size_t from) const { return {bytes_.get() + from, size_ - from}; }
  void clear() { size_ = 0; }

  // Room for `n` more bytes after the data, not zeroed. The pointer stays
  // valid until the next Room, Filled or Drop (clear keeps it).
  char* Room(size_t n) {
    if (capacity_ - size_ < n) {
      size_t capacity = capacity_ == 0 ? n : capacity_;
      while (capacity - size_ < n) capacity *= 2;
      auto grown = std::make_unique_for_overwrite<char[]>(capacity);
      if (size_ > 0) std::memcpy(grown.get(), bytes_.get(), size_);
      bytes_ = std::move(grown);
      capacity_ = capacity;
    }
    return bytes_.get() + size_;
  }
  // `n` bytes were written at Room's pointer. Precondition: n <= its room.
  void Filled(size_t n) { size_ += n; }
  // Drops the first `n` bytes (parsed). Precondition: n <= size().
  void Drop(size_t n) {
    if (n == 0) return;
    size_ -= n;
    if (size_ > 0) std::memmove(bytes_.get(), bytes_.get() + n, size_);
  }

 private:
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace seqd::tools
