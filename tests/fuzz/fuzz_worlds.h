// What the fuzz targets' server worlds share: options under which nothing
// waits long, and Exchange, one whole session over a connected socket.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "server/auth/authenticator.h"
#include "server/base/asio_clock.h"
#include "server/base/log.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/snowflake/snowflake_generator.h"
#include "storage/memory/memory_store.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_tokens.h"
#include "tests/unit/test_services.h"

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

// The process's one World: built on first use, never torn down (libFuzzer
// exits the process).
template <typename World>
World& ProcessWorld() {
  static World* world = new World();
  return *world;
}

// `base`'s services with `auth` checking every request.
inline Services ServicesWithAuth(const TestServices& base, const Authenticator* auth) {
  Services s = base.services();
  s.auth = auth;
  return s;
}

// The lower half of a session target's world: an allocator over a memory
// store holding the keys "fuzz" (step 1000) and "f" (step 3, so a batch
// spans segments), "sg_" keys created on first use; its store calls run on
// one database thread, its timers on `io`, which the world runs itself.
// Also the fuzz tokens' Authenticator. Logs errors only.
struct AllocatorOnIo {
  explicit AllocatorOnIo(AllocatorOptions options)
      : work(boost::asio::make_work_guard(io)),
        clock(io),
        db(1),
        allocator(store, db, clock, KeyRules({{"sg_", 100}}), options) {
    SetLogLevel(LogLevel::kError);
    FUZZ_CHECK(store.CreateKey("fuzz", 1000, "").ok());
    FUZZ_CHECK(store.CreateKey("f", 3, "").ok());
  }

  std::unique_ptr<Authenticator> auth = LoadFuzzTokens();
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
  AsioClock clock;
  ThreadPoolRunner db;
  MemoryStore store;
  SegmentAllocator allocator;
};

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
