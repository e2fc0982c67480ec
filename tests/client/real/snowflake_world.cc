#include "tests/client/real/snowflake_world.h"

#include "server/base/manual_clock.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/binary/binary_server.h"
#include "tests/unit/net_test_support.h"
#include "tests/unit/test_services.h"

namespace seqd::clienttest {

namespace {

struct SnowflakeFront {
  SnowflakeFront(seqd::SegmentStore& store, seqd::TaskRunner& db, seqd::SegmentAllocator& allocator)
      : generator(wall, clock, Options()),
        services(store, db, allocator, {.snowflake = &generator}) {}
  static seqd::SnowflakeOptions Options() {
    seqd::SnowflakeOptions o;
    o.max_count = SnowflakeWorld::kMaxCount;
    return o;
  }
  seqd::ManualWallClock wall{SnowflakeWorld::kNowMs};
  seqd::ManualClock clock;
  seqd::SnowflakeGenerator generator;
  seqd::TestServices services;
  const seqd::Services& target = services;
};

using World =
    seqd::nettest::ServerWorld<seqd::BinaryServer, seqd::BinaryServerOptions, SnowflakeFront>;

}  // namespace

struct SnowflakeWorld::Impl {
  World world;
};

SnowflakeWorld::SnowflakeWorld() : impl_(std::make_unique<Impl>()) {
  REQUIRE(impl_->world.listening);
}
SnowflakeWorld::~SnowflakeWorld() = default;
uint16_t SnowflakeWorld::port() const { return impl_->world.server.port(); }

void SnowflakeWorld::Grant(int worker) {
  SnowflakeFront& f = impl_->world.front;
  f.generator.Grant(worker, 0, kNowMs + 3'600'000, f.clock.Now() + std::chrono::hours(1));
}

void SnowflakeWorld::Revoke(const char* why) { impl_->world.front.generator.Revoke(why); }

}  // namespace seqd::clienttest
