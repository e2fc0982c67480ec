// One program, even one translation unit, with the client's and the server's
// headers: their types of the same short names (IdRange, IdBatch,
// MessageStatus) live in different namespaces, so this compiles, links and
// runs ODR-clean. The client takes IDs from a real in-process BinaryServer.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <type_traits>

#include "seqd/client.h"
#include "seqd/message.h"
#include "server/core/segment_allocator.h"
#include "server/binary/binary_server.h"
#include "storage/message_store.h"
#include "tests/unit/net_test_support.h"

static_assert(!std::is_same_v<seqd::IdBatch, seqd::client::IdBatch>);
static_assert(!std::is_same_v<seqd::IdRange, seqd::client::IdRange>);
static_assert(!std::is_same_v<seqd::MessageStatus, seqd::client::MessageStatus>);

TEST_CASE("client and server in one program: IDs from a real server") {
  seqd::nettest::ServerWorld<seqd::BinaryServer, seqd::BinaryServerOptions> world;
  REQUIRE(world.listening);
  REQUIRE(world.mem.CreateKey("odr", 10, "").ok());

  // The server's own types, taken in-process.
  std::promise<seqd::Result<seqd::IdBatch>> taken;
  world.allocator.Take("odr", 3, [&](seqd::Result<seqd::IdBatch> r) { taken.set_value(r); });
  seqd::Result<seqd::IdBatch> server_side = taken.get_future().get();
  REQUIRE(server_side.ok());
  CHECK(server_side->ranges.front().first == 1);

  // The client's types, over the wire.
  seqd::client::ClientOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(world.server.port())};
  seqd::client::Client client(o);
  seqd::client::ClientResult<seqd::client::IdBatch> r = client.NextIds("odr", 2);
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  REQUIRE(r->ranges.size() == 1);
  const seqd::client::IdRange& range = r->ranges.front();
  CHECK(range.first == 4);
  CHECK(range.last == 5);
  CHECK(seqd::client::MessageStatus::kRecalled != seqd::client::MessageStatus::kNormal);
  CHECK(seqd::MessageStatus::kRecalled != seqd::MessageStatus::kNormal);
}
