// Room for a binary connection's next read: its input buffer holds the
// bytes not handled yet at [begin, end); before a read, the free room after
// them must take at least what the partial frame there still lacks.
//
// Thread safety: a function of its arguments (one connection's buffer).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace seqd {

inline constexpr size_t kFrameInitialReadBuffer = 16 * 1024;
inline constexpr size_t kFrameMinReadSpace = 4 * 1024;  // free room asked of each read

// Makes room after `end` in `in` for the next read: kFrameMinReadSpace, or
// the rest of the partial frame (its 4-byte length at `begin` is whole, at
// most `max_frame` bytes) as far as what arrived so far doubles. Grows with
// what arrived, never with what a header announces: a client that
// announces 1 MiB and sends 5 bytes gets a small buffer. May move the
// unhandled bytes to the front (then `begin` is 0).
inline void MakeFrameReadRoom(std::vector<char>& in, size_t& begin, size_t& end, size_t max_frame) {
  const size_t have = end - begin;
  size_t need = kFrameMinReadSpace;
  if (have >= 4) {
    const auto* p = reinterpret_cast<const unsigned char*>(in.data() + begin);
    const size_t frame =
        4 + ((size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]});
    if (frame > have) need = std::max(need, std::min(frame, max_frame) - have);
    need = std::min(need, std::max(kFrameMinReadSpace, have));
  }
  if (in.size() - end >= need) return;
  if (begin > 0) {
    std::memmove(in.data(), in.data() + begin, have);
    begin = 0;
    end = have;
  }
  if (in.size() - end < need) {
    in.resize(std::max({end + need, in.size() * 2, kFrameInitialReadBuffer}));
  }
}

}  // namespace seqd
