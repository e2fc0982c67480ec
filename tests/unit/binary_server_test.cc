// BinaryServer over real loopback sockets (tests/unit/binary_test_client.h):
// the wire format, pipelining, errors and garbage. Limits and the
// connection's life: binary_server_limits_test.cc.
#include "server/binary/binary_server.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proto/binary_codec.h"
#include "tests/unit/binary_test_client.h"

using namespace seqd;
using namespace seqd::binarytest;

TEST_CASE("binary: PING round trip") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.server.port() != 0);
  Client c(f.server.port());
  REQUIRE(c.connected());

  // The document's PING vector, byte for byte.
  c.Send(Hex("0000000a 01 01 0000 00000001 6869"));
  std::string want = Hex("0000000c 01 01 0001 00000001 0000 6869");
  std::optional<Frame> r = c.Read();
  REQUIRE(r);
  std::string got;
  proto::AppendFrame(got, static_cast<Opcode>(r->opcode), r->flags, r->request_id, r->payload);
  CHECK(got == want);

  CHECK(RoundTrip(c, Ping(2, "")).result().empty());
  const std::string big(proto::kMaxPingPayload, '\x7f');
  CHECK(RoundTrip(c, Ping(3, big)).result() == big);
  Frame too_big = RoundTrip(c, Ping(4, big + "x"));
  CHECK(too_big.status() == WireStatus::kInvalidArgument);
  CHECK(RoundTrip(c, Ping(5, "still here")).result() == "still here");
  CHECK(f.server.open_connections() == 1);
}

TEST_CASE("binary: NEXT_IDS returns the right ranges") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  Client c(f.server.port());
  REQUIRE(c.connected());
  using R = std::vector<proto::IdRangeWire>;
  auto next_ready = [&] {
    return WaitFor([&] {
      auto snap = f.allocator.SnapshotKey("k");
      return snap && snap->next.ready;
    });
  };
  CHECK(RoundTrip(c, NextIds(1, "k", 3)).ranges() == R{{1, 3}});
  REQUIRE(next_ready());
  const int64_t last2 = f.allocator.SnapshotKey("k")->next.last;  // segment 2: [11, last2]
  REQUIRE(last2 > 12);
  // Another server takes 5 IDs: segment 3 will not follow segment 2.
  REQUIRE(f.mem.Reserve("k", 5).ok());
  // Contiguous segments give one range.
  CHECK(RoundTrip(c, NextIds(2, "k", 9)).ranges() == R{{4, 12}});
  const int64_t half = (last2 - 12) / 2;
  CHECK(RoundTrip(c, NextIds(3, "k", static_cast<uint32_t>(half))).ranges() == R{{13, 12 + half}});
  REQUIRE(next_ready());
  CHECK(f.allocator.SnapshotKey("k")->next.first == last2 + 6);
  // Across the gap: two ranges.
  const int64_t rest = last2 - (12 + half);
  CHECK(RoundTrip(c, NextIds(0xFFFFFFFF, "k", static_cast<uint32_t>(rest + 2))).ranges() ==
        R{{13 + half, last2}, {last2 + 6, last2 + 7}});
}

TEST_CASE("binary: 1000 pipelined requests are all answered once with unique IDs") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("p", 50, "").ok());
  Client c(f.server.port());
  REQUIRE(c.connected());
  constexpr uint32_t kRequests = 1000;
  std::string batch;
  for (uint32_t i = 1; i <= kRequests; ++i) {
    if (i % 100 == 0) {
      proto::AppendFrame(batch, Opcode::kPing, 0, i, "p");
    } else {
      proto::AppendNextIdsRequest(batch, i, "p", 1 + i % 3);
    }
  }
  c.Send(batch);
  std::map<uint32_t, int> answered;
  std::set<int64_t> ids;
  int64_t total = 0;
  for (uint32_t n = 0; n < kRequests; ++n) {
    std::optional<Frame> r = c.Read();
    REQUIRE(r);
    ++answered[r->request_id];
    if (r->request_id % 100 == 0) {
      CHECK(r->opcode == static_cast<uint8_t>(Opcode::kPing));
      CHECK(r->result() == "p");
      continue;
    }
    int64_t got = 0;
    for (const auto& range : r->ranges()) {
      for (int64_t id = range.first; id <= range.last; ++id) {
        ids.insert(id);
        ++got;
      }
    }
    CHECK(got == 1 + r->request_id % 3);
    total += got;
  }
  CHECK(answered.size() == kRequests);
  for (const auto& [id, times] : answered) {
    CHECK(id >= 1);
    CHECK(id <= kRequests);
    CHECK(times == 1);
  }
  CHECK(static_cast<int64_t>(ids.size()) == total);
  CHECK(c.pending().empty());
}

TEST_CASE("binary: concurrent pipelining connections get disjoint IDs") {
  ServerFixture f(EachIoLayout(BinaryServerOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("shared", 7, "").ok());
  constexpr int kClients = 4;
  constexpr uint32_t kEach = 500;
  std::vector<std::vector<int64_t>> got(kClients);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      Client c(f.server.port());
      if (!c.connected()) return void(++failures);
      std::string batch;
      for (uint32_t i = 0; i < kEach; ++i) proto::AppendNextIdsRequest(batch, i, "shared", 2);
      // In pieces, so frames straddle reads.
      for (size_t off = 0; off < batch.size(); off += 997) c.Send(batch.substr(off, 997));
      for (uint32_t i = 0; i < kEach; ++i) {
        std::optional<Frame> r = c.Read();
        if (!r) return void(++failures);
        auto parsed = proto::ParseResponse(r->payload);
        if (!parsed || parsed->status != WireStatus::kOk) return void(++failures);
        auto ranges = proto::ParseNextIdsResult(parsed->result);
        if (!ranges) return void(++failures);
        for (const auto& range : *ranges) {
          for (int64_t id = range.first; id <= range.last; ++id) got[t].push_back(id);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  std::set<int64_t> all;
  size_t n = 0;
  for (const auto& v : got) {
    n += v.size();
    all.insert(v.begin(), v.end());
  }
  CHECK(n == kClients * kEach * 2);
  CHECK(all.size() == n);
}

TEST_CASE("binary: request errors get their status and the connection stays usable") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  Client c(f.server.port());
  REQUIRE(c.connected());
  const int64_t max = f.allocator.options().max_count;

  Frame zero = RoundTrip(c, NextIds(1, "k", 0));
  CHECK(zero.status() == WireStatus::kInvalidArgument);
  CHECK(zero.message().find("count") != std::string::npos);
  CHECK(RoundTrip(c, NextIds(2, "k", static_cast<uint32_t>(max + 1))).status() ==
        WireStatus::kInvalidArgument);
  CHECK(RoundTrip(c, NextIds(3, "k", 0xFFFFFFFF)).status() == WireStatus::kInvalidArgument);
  CHECK(RoundTrip(c, NextIds(4, "bad\tkey!", 1)).status() == WireStatus::kInvalidArgument);
  CHECK(RoundTrip(c, NextIds(5, "", 1)).status() == WireStatus::kInvalidArgument);
  CHECK(RoundTrip(c, NextIds(6, std::string(256, 'a'), 1)).status() ==
        WireStatus::kInvalidArgument);
  Frame unknown = RoundTrip(c, NextIds(7, "nokey", 1));
  CHECK(unknown.status() == WireStatus::kUnknownKey);
  CHECK(unknown.message().starts_with("unknown key 'nokey': "));
  CHECK(unknown.message().find("--auto-keys") != std::string::npos);

  // Payloads that are not `u16 key_length, key, u32 count` exactly.
  std::string extra;
  proto::AppendFrame(extra, Opcode::kNextIds, 0, 8, Hex("0001 6b 00000001 00"));
  CHECK(RoundTrip(c, extra).status() == WireStatus::kInvalidArgument);
  std::string shortp;
  proto::AppendFrame(shortp, Opcode::kNextIds, 0, 9, Hex("0001 6b 0000"));
  CHECK(RoundTrip(c, shortp).status() == WireStatus::kInvalidArgument);

  CHECK(RoundTrip(c, NextIds(10, "k", static_cast<uint32_t>(max))).status() == WireStatus::kOk);
  CHECK(RoundTrip(c, Ping(11, "ok")).result() == "ok");
}

TEST_CASE("binary: unknown opcode gets UNKNOWN_OPCODE and the connection stays usable") {
  ServerFixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  REQUIRE(c.connected());
  for (uint8_t op : {uint8_t{0x00}, uint8_t{0x04}, uint8_t{0x10}, uint8_t{0x43}, uint8_t{0xFF}}) {
    INFO(int{op});
    std::string req;
    proto::AppendFrame(req, static_cast<Opcode>(op), 0, 100 + op, "payload");
    Frame r = RoundTrip(c, req);
    CHECK(r.status() == WireStatus::kUnknownOpcode);
  }
  CHECK(RoundTrip(c, Ping(1, "x")).result() == "x");
}

TEST_CASE("binary: STORE_UNAVAILABLE and SHUTTING_DOWN") {
  AllocatorOptions a;
  a.wait_deadline = 300ms;
  ServerFixture f({}, a);
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("down", 10, "").ok());
  f.store.SetDown(true);
  Client c(f.server.port());
  REQUIRE(c.connected());
  CHECK(RoundTrip(c, NextIds(1, "down", 1)).status() == WireStatus::kStoreUnavailable);
  CHECK(RoundTrip(c, Ping(2, "up")).result() == "up");

  // A draining allocator: the response says so and the connection closes.
  f.allocator.Shutdown();
  CHECK(RoundTrip(c, NextIds(3, "down", 1)).status() == WireStatus::kShuttingDown);
  CHECK(c.WaitClosed());
}

TEST_CASE("binary: protocol errors send one error frame, then close") {
  BinaryServerOptions o;
  o.max_frame_bytes = 4096;
  ServerFixture f(o);
  REQUIRE(f.listening);

  SUBCASE("length above the maximum: FRAME_TOO_LARGE from the length alone") {
    Client c(f.server.port());
    c.Send(Hex("00100000"));
    ExpectProtocolError(c, WireStatus::kFrameTooLarge);
  }
  SUBCASE("length above the configured maximum") {
    Client c(f.server.port());
    std::string req;
    proto::AppendFrame(req, Opcode::kPing, 0, 1, std::string(4096, 'x'));
    c.Send(req);
    ExpectProtocolError(c, WireStatus::kFrameTooLarge);
  }
  SUBCASE("bad version: UNSUPPORTED_VERSION") {
    Client c(f.server.port());
    c.Send(Hex("00000008 02 01 0000 00000001"));
    std::optional<Frame> r = c.Read();
    REQUIRE(r);
    CHECK(r->status() == WireStatus::kUnsupportedVersion);
    CHECK(r->message() == "unsupported version 2");
    CHECK(c.WaitClosed());
  }
  SUBCASE("length below 8: MALFORMED_FRAME") {
    Client c(f.server.port());
    c.Send(Hex("00000007 01 01 0000 000000"));
    ExpectProtocolError(c, WireStatus::kMalformedFrame);
  }
  SUBCASE("unknown flag bits: MALFORMED_FRAME") {
    Client c(f.server.port());
    c.Send(Hex("00000008 01 01 0002 00000001"));
    ExpectProtocolError(c, WireStatus::kMalformedFrame);
  }
  SUBCASE("a response frame from the client: MALFORMED_FRAME") {
    Client c(f.server.port());
    c.Send(Hex("0000000c 01 01 0001 00000001 0000 6869"));
    ExpectProtocolError(c, WireStatus::kMalformedFrame);
  }
  SUBCASE("requests before the bad frame are answered first") {
    REQUIRE(f.mem.CreateKey("k", 10, "").ok());
    Client c(f.server.port());
    c.Send(Ping(1, "a") + NextIds(2, "k", 1) + Hex("00000008 09 01 0000 00000003") +
           Ping(4, "never"));
    // Read until the server closes; the error frame is the last one.
    std::vector<Frame> got;
    while (std::optional<Frame> r = c.Read()) got.push_back(*r);
    REQUIRE(got.size() >= 2);
    CHECK(got[0].request_id == 1);
    CHECK(got[0].result() == "a");
    CHECK(got.back().request_id == 0);
    CHECK(got.back().status() == WireStatus::kUnsupportedVersion);
    // The NEXT_IDS (parked on a fresh key) may be answered before the error
    // frame or dropped; the PING after the bad frame is never answered.
    CHECK(got.size() <= 3);
    for (const Frame& fr : got) CHECK(fr.request_id != 4);
    CHECK(c.pending().empty());
  }
  SUBCASE("HTTP on the binary port") {
    Client c(f.server.port());
    c.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    ExpectProtocolError(c, WireStatus::kFrameTooLarge);
  }
  // The server is still fine.
  Client ok(f.server.port());
  REQUIRE(ok.connected());
  CHECK(RoundTrip(ok, Ping(9, "alive")).result() == "alive");
  CHECK(WaitFor([&] { return f.server.open_connections() == 1; }));
}

TEST_CASE("binary: random garbage never crashes the server") {
  ServerFixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  std::mt19937 rng(12345);
  for (int round = 0; round < 60; ++round) {
    INFO("round " << round);
    std::string garbage(1 + rng() % 300, '\0');
    for (char& ch : garbage) ch = static_cast<char>(rng());
    // Some rounds start with a plausible header so the decoder goes deeper.
    if (round % 3 == 1) {
      garbage.replace(0, std::min<size_t>(garbage.size(), 5), Hex("00000010 01"));
    } else if (round % 3 == 2) {
      std::string valid = NextIds(round, "k", 1);
      garbage = valid.substr(0, 6) + garbage;
    }
    Client c(f.server.port());
    REQUIRE(c.connected());
    c.Send(garbage);
    c.ShutdownSend();  // whatever the server made of it, it closes after our EOF
    bool closed = false;
    for (int i = 0; i < 100 && !closed; ++i) {
      std::optional<Frame> r = c.Read(5s);  // every frame it sends is well formed
      if (!r) closed = true;
    }
    CHECK(closed);
  }
  Client ok(f.server.port());
  CHECK(RoundTrip(ok, NextIds(1, "k", 1)).status() == WireStatus::kOk);
  CHECK(WaitFor([&] { return f.server.open_connections() == 1; }));
}

TEST_CASE("binary: Listen() reports a port in use and bad addresses without throwing") {
  ServerFixture f;
  REQUIRE(f.listening);
  BinaryServerOptions o;
  o.port = f.server.port();
  BinaryServer clash(f.io, o, f.front.target);
  Status s = clash.Listen();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == ErrorCode::kInvalidArgument);
  CHECK(s.error().message.find(std::to_string(o.port)) != std::string::npos);
  CHECK(clash.port() == 0);

  BinaryServerOptions bad;
  bad.address = "not an address";
  BinaryServer nowhere(f.io, bad, f.front.target);
  Status b = nowhere.Listen();
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("not an address") != std::string::npos);
}
