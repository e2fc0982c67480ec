// A BinaryDispatcher over real services on a memory store (key "k", step
// 10), a one-thread database runner and a manual clock, answering into a
// test's `Connection` (a string-backed BinaryConnection).
//
// Ownership: the fixture owns everything; the database thread is stopped
// before anything else goes. Thread safety: the test's thread, plus the
// database thread the services use.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "proto/id_codec.h"
#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/binary/binary_dispatcher.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/test_services.h"

namespace seqd {

template <typename Connection>
struct DispatcherFixture {
  explicit DispatcherFixture(AllocatorOptions options = {})
      : allocator(store, db, clock, KeyRules(), options) {
    REQUIRE(store.CreateKey("k", 10, "").ok());
  }
  MemoryStore store;
  ThreadPoolRunner db{1};
  ManualClock clock;
  SegmentAllocator allocator;
  TestServices services{store, db, allocator};
  BinaryDispatcher dispatcher{services, BinaryDispatchLimits{}};
  Connection conn{dispatcher};
  // Last: the database thread is done before anything above goes.
  StopRunnerOnExit stop_db{db};
};

// A NEXT_IDS request frame.
inline std::string NextIdsFrame(uint32_t id, std::string_view key, uint32_t count) {
  std::string out;
  proto::AppendNextIdsRequest(out, id, key, count);
  return out;
}

}  // namespace seqd
