// Store groups over the binary protocol (docs/protocol.md, "Cluster ops"):
// on a connection that asked (PLACEMENT), answers are preceded by a
// PLACEMENT push once the instance's placement version rose; a peer's
// PLACEMENT is heard (only from a token with the cluster scope) and
// answered with this instance's version. Real loopback sockets (and the
// dispatcher alone for tokens), a fake placement.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proto/cluster_codec.h"
#include "proto/message_codec.h"
#include "server/auth/access.h"
#include "server/auth/authenticator.h"
#include "server/binary/binary_server.h"
#include "tests/unit/binary_test_client.h"
#include "tests/unit/dispatcher_fixture.h"
#include "tests/unit/fake_placement.h"
#include "tests/unit/string_connection.h"

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

TEST_CASE("binary: a connection that asked (PLACEMENT) gets a push before answers once it rose") {
  World w;
  REQUIRE(w.listening);
  REQUIRE(w.mem.CreateKey("k", 100, "").ok());
  Client a(w.server.port());
  REQUIRE(a.connected());
  w.front.placement.current = 7;

  // Not asked: no push, whatever the version.
  auto frames = a.Exchange(binarytest::Ping(1, "x"));
  REQUIRE(frames.size() == 1);

  // Asked: the answer carries 7; nothing is pushed until it rises.
  frames = a.Exchange(PlacementRequest(2, 0));
  REQUIRE(frames.size() == 1);
  CHECK(proto::ParsePlacementVersion(frames[0].result()) == 7);
  frames = a.Exchange(binarytest::NextIds(3, "k", 1));
  CHECK(frames.size() == 1);

  // It rose: the next answer comes after one push, the one after that alone.
  w.front.placement.current = 9;
  frames = a.Exchange(binarytest::NextIds(4, "k", 1));
  REQUIRE(frames.size() == 2);
  CHECK(PushedVersion(frames[0]) == 9);
  CHECK(frames[1].ranges().size() == 1);
  frames = a.Exchange(binarytest::Ping(5, "x"));
  CHECK(frames.size() == 1);

  // Another connection that never asked hears nothing.
  Client b(w.server.port());
  REQUIRE(b.connected());
  frames = b.Exchange(binarytest::Ping(1, "y"));
  CHECK(frames.size() == 1);

  // Pipelined requests after a rise: one push, ahead of all their answers.
  w.front.placement.current = 11;
  std::string batch = binarytest::Ping(6, "p") + binarytest::NextIds(7, "k", 2);
  a.Send(batch);
  std::vector<binarytest::Frame> got;
  while (got.size() < 3) {
    std::optional<binarytest::Frame> f = a.Read();
    REQUIRE(f);
    got.push_back(*f);
  }
  CHECK(PushedVersion(got[0]) == 11);
  CHECK_FALSE(PushedVersion(got[1]));
  CHECK_FALSE(PushedVersion(got[2]));
  CHECK_FALSE(a.Read(100ms));  // nothing more
  CHECK_FALSE(b.Read(100ms));
}

TEST_CASE("binary: a peer's PLACEMENT is heard and answered with this instance's version") {
  World w;
  REQUIRE(w.listening);
  w.front.placement.current = 4;
  Client c(w.server.port());
  REQUIRE(c.connected());
  auto frames = c.Exchange(PlacementRequest(1, 12));
  REQUIRE(frames.size() == 1);  // the answer carries 4: no push
  CHECK(frames[0].opcode == static_cast<uint8_t>(proto::kOpPlacement));
  CHECK(frames[0].flags == proto::kFlagResponse);
  CHECK(proto::ParsePlacementVersion(frames[0].result()) == 4);
  CHECK(w.front.placement.heard() == std::vector<int64_t>{12});  // open: any connection is a peer

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

TEST_CASE("binary: without store groups PLACEMENT is answered 0 and nothing is ever pushed") {
  binarytest::ServerFixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  REQUIRE(c.connected());
  auto frames = c.Exchange(PlacementRequest(1, 3));
  REQUIRE(frames.size() == 1);
  CHECK(proto::ParsePlacementVersion(frames[0].result()) == 0);
  CHECK(c.Exchange(binarytest::Ping(2, "x")).size() == 1);
}

namespace {

struct TokensFile {
  std::string path = "/tmp/seqd_placement_test_" + std::to_string(::getpid()) + ".tokens";
  explicit TokensFile(const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }
  ~TokensFile() { std::remove(path.c_str()); }
};

std::string TokenLine(const std::string& id, const std::string& secret, const std::string& scopes) {
  return id + " " + DigestHex(Sha256(secret)) + " " + scopes + "\n";
}

}  // namespace

TEST_CASE("binary: with tokens, PLACEMENT is heard from a peer's token only, answered to any") {
  TokensFile file(TokenLine("peer", "p-secret", "cluster") + TokenLine("app", "a-secret", "ids:*"));
  auto auth = Authenticator::FromFile(file.path);
  REQUIRE(auth.ok());
  DispatcherFixture<StringConnection> f;
  FakePlacement placement;
  placement.current = 4;
  TestServices services(f.store, f.db, f.allocator, {.placement = &placement});
  BinaryDispatcher dispatcher(services, BinaryDispatchLimits{});
  auto ask = [&](const std::string& secret, int64_t told) {
    StringConnection c(dispatcher);
    c.access() = IdentifyBy(auth->get(), secret, "binary", "127.0.0.1:1");
    std::string frame;
    proto::AppendPlacementRequest(frame, 1, told);
    dispatcher.Handle(proto::DecodeFrame(frame).frame, c);
    const proto::DecodeResult r = proto::DecodeServerFrame(c.out());
    REQUIRE(r.state == proto::DecodeState::kFrame);
    auto resp = proto::ParseResponse(r.frame.payload);
    REQUIRE(resp);
    return std::make_pair(resp->status, c.placement_pushes);
  };
  // An application's token: answered (and pushed to), its version ignored.
  auto [app_status, app_pushes] = ask("a-secret", 50);
  CHECK(app_status == proto::Status::kOk);
  CHECK(app_pushes);
  CHECK(placement.heard().empty());
  // A peer's token: heard.
  auto [peer_status, peer_pushes] = ask("p-secret", 60);
  CHECK(peer_status == proto::Status::kOk);
  CHECK(placement.heard() == std::vector<int64_t>{60});
  // No token: UNAUTHENTICATED, nothing asked for.
  auto [none_status, none_pushes] = ask("", 70);
  CHECK(none_status == proto::Status::kUnauthenticated);
  CHECK_FALSE(none_pushes);
  CHECK(placement.heard() == std::vector<int64_t>{60});
}
