// Store groups over the binary protocol (docs/protocol.md, "Cluster ops"):
// answers are preceded by a PLACEMENT push once the instance's placement
// version rose, and a peer's PLACEMENT request is heard and answered with
// this instance's version. Real loopback sockets, a fake placement.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "proto/cluster_codec.h"
#include "proto/message_codec.h"
#include "server/binary/binary_server.h"
#include "tests/unit/binary_test_client.h"
#include "tests/unit/fake_placement.h"

using namespace seqd;
using namespace seqd::nettest;
using namespace std::chrono_literals;
using WireStatus = proto::Status;

namespace {

// Built before the server: the seam with a placement and a cluster.
struct PlacementFront {
  PlacementFront(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : services(store, db, allocator, {.placement = &placement, .cluster = &cluster}) {}
  FakePlacement placement;
  FakeCluster cluster;
  TestServices services;
  const Services& target = services;
};

using World = ServerWorld<BinaryServer, BinaryServerOptions, PlacementFront>;

// A client that reads server frames (answers and pushes).
class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 16384) {}

  std::optional<binarytest::Frame> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      proto::DecodeResult r = proto::DecodeServerFrame(buffer());
      if (r.state == proto::DecodeState::kFrame) {
        binarytest::Frame f{r.frame.opcode, r.frame.flags, r.frame.request_id,
                            std::string(r.frame.payload)};
        buffer().erase(0, r.consumed);
        return f;
      }
      REQUIRE(r.state == proto::DecodeState::kNeedMore);
      if (ReadSome(deadline)) return std::nullopt;
    }
  }

  // Sends `request` and returns the frames up to and including its answer.
  std::vector<binarytest::Frame> Exchange(const std::string& request) {
    const uint32_t id = proto::DecodeFrame(request).frame.request_id;
    Send(request);
    std::vector<binarytest::Frame> frames;
    for (;;) {
      std::optional<binarytest::Frame> f = Read();
      REQUIRE(f);
      frames.push_back(*f);
      if (!(f->flags & proto::kFlagPush) && f->request_id == id) return frames;
    }
  }
};

// The version a frame pushes, or nullopt if it is not a PLACEMENT push.
std::optional<int64_t> PushedVersion(const binarytest::Frame& f) {
  if (f.opcode != static_cast<uint8_t>(proto::kOpPlacement) ||
      f.flags != (proto::kFlagResponse | proto::kFlagPush) || f.request_id != 0) {
    return std::nullopt;
  }
  return proto::ParsePlacementVersion(f.result());
}

std::string PlacementRequest(uint32_t id, int64_t version) {
  std::string out;
  proto::AppendPlacementRequest(out, id, version);
  return out;
}

}  // namespace

TEST_CASE("binary: answers are preceded by a PLACEMENT push once the placement version rose") {
  World w;
  REQUIRE(w.listening);
  REQUIRE(w.mem.CreateKey("k", 100, "").ok());
  Client a(w.server.port());
  REQUIRE(a.connected());

  // Version 0 (no change yet): nothing is pushed.
  auto frames = a.Exchange(binarytest::Ping(1, "x"));
  REQUIRE(frames.size() == 1);

  // It rose: the next answer comes after one push, the one after that alone.
  w.front.placement.current = 7;
  frames = a.Exchange(binarytest::NextIds(2, "k", 1));
  REQUIRE(frames.size() == 2);
  CHECK(PushedVersion(frames[0]) == 7);
  CHECK(frames[1].ranges().size() == 1);
  frames = a.Exchange(binarytest::Ping(3, "x"));
  CHECK(frames.size() == 1);

  // A new connection is told before its first answer.
  Client b(w.server.port());
  REQUIRE(b.connected());
  frames = b.Exchange(binarytest::Ping(1, "y"));
  REQUIRE(frames.size() == 2);
  CHECK(PushedVersion(frames[0]) == 7);

  // Pipelined requests after a rise: one push, ahead of all their answers.
  w.front.placement.current = 9;
  std::string batch = binarytest::Ping(4, "p") + binarytest::NextIds(5, "k", 2);
  a.Send(batch);
  std::vector<binarytest::Frame> got;
  while (got.size() < 3) {
    std::optional<binarytest::Frame> f = a.Read();
    REQUIRE(f);
    got.push_back(*f);
  }
  CHECK(PushedVersion(got[0]) == 9);
  CHECK_FALSE(PushedVersion(got[1]));
  CHECK_FALSE(PushedVersion(got[2]));
  CHECK_FALSE(a.Read(100ms));  // nothing more
}

TEST_CASE("binary: a peer's PLACEMENT is heard and answered with this instance's version") {
  World w;
  REQUIRE(w.listening);
  w.front.placement.current = 4;
  Client c(w.server.port());
  REQUIRE(c.connected());
  auto frames = c.Exchange(PlacementRequest(1, 12));
  REQUIRE(frames.size() == 2);  // the push (4), then the answer
  CHECK(PushedVersion(frames[0]) == 4);
  CHECK(frames[1].opcode == static_cast<uint8_t>(proto::kOpPlacement));
  CHECK(frames[1].flags == proto::kFlagResponse);
  CHECK(proto::ParsePlacementVersion(frames[1].result()) == 4);
  CHECK(w.front.placement.heard() == std::vector<int64_t>{12});

  // A payload that is not one i64 >= 0: INVALID_ARGUMENT, nothing heard,
  // the connection stays.
  std::string bad;
  proto::AppendFrame(bad, proto::kOpPlacement, 0, 2, "abc");
  frames = c.Exchange(bad);
  CHECK(frames.back().status() == WireStatus::kInvalidArgument);
  frames = c.Exchange(PlacementRequest(3, -1));
  CHECK(frames.back().status() == WireStatus::kInvalidArgument);
  CHECK(w.front.placement.heard() == std::vector<int64_t>{12});
  CHECK(c.Exchange(binarytest::Ping(4, "still")).back().result() == "still");
}

TEST_CASE("binary: without cluster mode PLACEMENT is an unknown opcode and nothing is pushed") {
  binarytest::ServerFixture f;
  REQUIRE(f.listening);
  binarytest::Client c(f.server.port());
  REQUIRE(c.connected());
  binarytest::Frame r = binarytest::RoundTrip(c, PlacementRequest(1, 3));
  CHECK(r.status() == WireStatus::kUnknownOpcode);
}
