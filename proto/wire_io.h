// Big-endian field writers and a bounds-checked field reader, shared by
// the codecs of proto/ (binary protocol payloads, docs/protocol.md).
// Internal to proto/: other folders use the codecs, not these.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace seqd::proto::wire {

inline void Put8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }

inline void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

inline void Put32(std::string& out, uint32_t v) {
  Put16(out, static_cast<uint16_t>(v >> 16));
  Put16(out, static_cast<uint16_t>(v));
}

inline void Put64(std::string& out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  Put32(out, static_cast<uint32_t>(u >> 32));
  Put32(out, static_cast<uint32_t>(u));
}

// A u16 length, then the bytes. REQUIRES: s.size() <= UINT16_MAX.
inline void PutStr16(std::string& out, std::string_view s) {
  assert(s.size() <= UINT16_MAX);
  Put16(out, static_cast<uint16_t>(s.size()));
  out.append(s.data(), s.size());
}

// A u32 length, then the bytes.
inline void PutBytes32(std::string& out, std::string_view s) {
  Put32(out, static_cast<uint32_t>(s.size()));
  out.append(s.data(), s.size());
}

// Big-endian values at p. REQUIRES: 4 (8) readable bytes at p.
inline uint32_t Load32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}

inline int64_t Load64(const char* p) {
  return static_cast<int64_t>((uint64_t{Load32(p)} << 32) | uint64_t{Load32(p + 4)});
}

// Reads big-endian fields off the front of a view. The first read past
// the end fails it: ok() turns false for good and every later read
// returns 0 or an empty view. Does not own the bytes it reads.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  // Every byte read and nothing short.
  bool done() const { return ok_ && in_.empty(); }
  size_t left() const { return in_.size(); }

  uint8_t U8() {
    if (!Need(1)) return 0;
    const auto v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return v;
  }
  uint16_t U16() {
    if (!Need(2)) return 0;
    const auto* u = reinterpret_cast<const unsigned char*>(in_.data());
    in_.remove_prefix(2);
    return static_cast<uint16_t>((u[0] << 8) | u[1]);
  }
  uint32_t U32() {
    const uint32_t hi = U16();
    return (hi << 16) | U16();
  }
  int32_t I32() { return static_cast<int32_t>(U32()); }
  int64_t I64() {
    const uint64_t hi = U32();
    return static_cast<int64_t>((hi << 32) | U32());
  }
  std::string_view Take(size_t n) {
    if (!Need(n)) return {};
    std::string_view s = in_.substr(0, n);
    in_.remove_prefix(n);
    return s;
  }
  // A u16 length, then that many bytes (a view into the input).
  std::string_view Str() { return Take(U16()); }
  // A u32 length, then that many bytes.
  std::string_view Bytes() { return Take(U32()); }
  // A u32 list count whose items take at least `min_item` bytes each:
  // fails if the rest of the input cannot hold that many, so no caller
  // allocates more than the input backs.
  size_t Count(size_t min_item) {
    const uint64_t n = U32();
    if (ok_ && n * min_item > in_.size()) ok_ = false;
    return ok_ ? static_cast<size_t>(n) : 0;
  }
  void Fail() { ok_ = false; }

 private:
  bool Need(size_t n) {
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace seqd::proto::wire
