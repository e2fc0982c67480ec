// What the fuzz targets' server worlds share: options under which nothing
// waits long, and Exchange, one whole session over a connected socket.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>

#include "server/core/segment_allocator.h"
#include "server/snowflake/snowflake_generator.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seqd::fuzz {

// Allocator options whose requests give up after 200 ms.
inline AllocatorOptions ShortWaitAllocatorOptions() {
  AllocatorOptions o;
  o.wait_deadline = std::chrono::milliseconds(200);
  return o;
}

// A snowflake generator's options with 16 IDs per millisecond (so requests
// park), at most 100 per request, giving up after 200 ms.
inline SnowflakeOptions ShortWaitSnowflakeOptions() {
  SnowflakeOptions o;
  o.layout = SnowflakeLayout{41, 10, 4, SnowflakeLayout::kLeafEpochMs};
  o.max_count = 100;
  o.wait_deadline = std::chrono::milliseconds(200);
  return o;
}

// Writes `input` to `fd`, half-closes, and reads until EOF, interleaving both
// so a server that answers while we still write never deadlocks us. Returns
// all that was read; a session not over within 10 s fails a FUZZ_CHECK.
inline std::string Exchange(int fd, std::string_view input) {
  std::string output;
  size_t written = 0;
  bool write_closed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[65536];
  for (;;) {
    if (written == input.size() && !write_closed) {
      ::shutdown(fd, SHUT_WR);
      write_closed = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (write_closed ? 0 : POLLOUT)), 0};
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline);  // a hung session is a bug
    if (::poll(&p, 1, 100) <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;  // libFuzzer's timer signal
      if (n <= 0) return output;              // EOF or reset: the server closed
      output.append(buf, static_cast<size_t>(n));
    }
    if (!write_closed && (p.revents & POLLOUT)) {
      const ssize_t n = ::send(fd, input.data() + written, input.size() - written, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;  // libFuzzer's timer signal
      // On an error the server closed its side: just read the rest.
      written = n < 0 ? input.size() : written + static_cast<size_t>(n);
    }
  }
}

}  // namespace seqd::fuzz
