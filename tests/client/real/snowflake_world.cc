#include "tests/client/real/snowflake_world.h"

#include "server/core/manual_clock.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/tcp/binary_server.h"
#include "tests/unit/net_test_support.h"

namespace seqd::clienttest {

namespace {

struct SnowflakeFront {
  SnowflakeFront(seqd::SegmentStore&, seqd::TaskRunner&, seqd::SegmentAllocator& allocator)
      : allocator(allocator), generator(wall, clock, Options()) {}
  static seqd::SnowflakeOptions Options() {
    seqd::SnowflakeOptions o;
    o.max_count = SnowflakeWorld::kMaxCount;
    return o;
  }
  seqd::SegmentAllocator& allocator;
  seqd::ManualWallClock wall{SnowflakeWorld::kNowMs};
  seqd::ManualClock clock;
  seqd::SnowflakeGenerator generator;
  SnowflakeFront& target = *this;
};

struct SnowflakeServer : seqd::BinaryServer {
  SnowflakeServer(boost::asio::io_context& io, seqd::BinaryServerOptions o, SnowflakeFront& front)
      : seqd::BinaryServer(io, std::move(o), front.allocator, nullptr, &front.generator) {}
};

using World =
    seqd::nettest::ServerWorld<SnowflakeServer, seqd::BinaryServerOptions, SnowflakeFront>;

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
