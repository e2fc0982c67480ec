// BinaryServer's snowflake ops (SNOWFLAKE 0x10, SNOWFLAKE_DECODE 0x11) over
// real loopback sockets, with a real SnowflakeGenerator on manual clocks: the
// test decides when time passes, so parked requests are answered from the
// test thread (not the connection's strand), as from a timer thread in
// production.
#include <doctest/doctest.h>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/snowflake_codec.h"
#include "server/base/manual_clock.h"
#include "server/metrics/metrics.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/binary/binary_server.h"
#include "tests/unit/binary_test_client.h"
#include "tests/unit/net_test_support.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace seqd::nettest;
using namespace std::chrono_literals;
using WireStatus = proto::Status;

namespace {

constexpr int64_t kT0 = 1795360448589;  // 2026-11-22T15:14:08.589Z
constexpr int kWorker = 5;
constexpr int64_t kMaxCount = 8;
constexpr int64_t kPerMs = 4;  // sequence_bits 2

// Built before the server: the generator and its clocks. Not granted: each
// test grants (or not) itself.
struct SnowflakeFront {
  SnowflakeFront(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : allocator(allocator),
        generator(wall, clock, Options()),
        services(store, db, allocator, {.snowflake = &generator}) {}
  static SnowflakeOptions Options() {
    SnowflakeOptions o;
    o.layout.sequence_bits = 2;
    o.max_count = kMaxCount;
    return o;
  }
  void Grant() { generator.Grant(kWorker, 0, kT0 + 1'000'000'000, clock.Now() + 1h); }

  SegmentAllocator& allocator;
  ManualWallClock wall{kT0};
  ManualClock clock;
  SnowflakeGenerator generator;
  TestServices services;
  const Services& target = services;
};

using World = ServerWorld<BinaryServer, BinaryServerOptions, SnowflakeFront>;
using PlainWorld = ServerWorld<BinaryServer, BinaryServerOptions>;

// A frame whose result decodes to snowflake IDs or a decoded snowflake.
struct Frame : binarytest::Frame {
  std::vector<int64_t> ids() const {
    proto::ResponseView r = response();
    REQUIRE_MESSAGE(r.status == WireStatus::kOk, proto::StatusName(r.status) << ": " << r.message);
    auto v = proto::ParseSnowflakeResult(r.result);
    REQUIRE(v);
    return *v;
  }
  proto::SnowflakeFieldsWire fields() const {
    proto::ResponseView r = response();
    REQUIRE_MESSAGE(r.status == WireStatus::kOk, proto::StatusName(r.status) << ": " << r.message);
    auto v = proto::ParseSnowflakeDecodeResult(r.result);
    REQUIRE(v);
    return *v;
  }
};

class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 65536) {}

  // One frame, or nullopt on close/error/timeout.
  std::optional<Frame> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      proto::DecodeResult r = proto::DecodeFrame(buffer());
      if (r.state == proto::DecodeState::kFrame) {
        CHECK(r.frame.flags == proto::kFlagResponse);
        Frame f{{r.frame.opcode, r.frame.flags, r.frame.request_id, std::string(r.frame.payload)}};
        buffer().erase(0, r.consumed);
        return f;
      }
      REQUIRE(r.state == proto::DecodeState::kNeedMore);
      if (ReadSome(deadline)) return std::nullopt;
    }
  }

  // Sends `request` and reads its answer, checking the echoed header.
  Frame Call(const std::string& request) {
    proto::DecodeResult req = proto::DecodeFrame(request);
    REQUIRE(req.state == proto::DecodeState::kFrame);
    Send(request);
    std::optional<Frame> f = Read();
    REQUIRE(f);
    CHECK(f->request_id == req.frame.request_id);
    CHECK(f->opcode == req.frame.opcode);
    return *f;
  }
  Frame Next(uint32_t id, uint32_t count) {
    std::string out;
    proto::AppendSnowflakeRequest(out, id, count);
    return Call(out);
  }
  Frame Decode(uint32_t id, int64_t snowflake) {
    std::string out;
    proto::AppendSnowflakeDecodeRequest(out, id, snowflake);
    return Call(out);
  }
  Frame Raw(proto::Opcode op, uint32_t id, std::string_view payload) {
    std::string out;
    proto::AppendFrame(out, op, 0, id, payload);
    return Call(out);
  }
};

// A world whose generator holds kWorker, and `c` connected to it.
struct GrantedWorld {
  GrantedWorld() {
    REQUIRE(w.listening);
    w.front.Grant();
    REQUIRE(c.connected());
  }
  World w;
  Client c{w.server.port()};
};

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

}  // namespace

TEST_CASE_FIXTURE(GrantedWorld,
                  "binary snowflake: IDs ascend, carry the worker and time, and decode back") {
  const std::vector<int64_t> first = c.Next(1, 3).ids();
  REQUIRE(first.size() == 3);
  CHECK(first[0] < first[1]);
  CHECK(first[1] < first[2]);
  const std::vector<int64_t> more = c.Next(2, 1).ids();
  REQUIRE(more.size() == 1);
  CHECK(more[0] > first[2]);

  const proto::SnowflakeFieldsWire f0 = c.Decode(3, first[0]).fields();
  CHECK(f0.time_ms == kT0);
  CHECK(f0.worker == kWorker);
  CHECK(f0.sequence == 0);
  CHECK(c.Decode(4, more[0]).fields() == proto::SnowflakeFieldsWire{kT0, kWorker, 3});
  // The answer is the generator's own decoding.
  const Result<SnowflakeFields> direct = w.front.generator.Decode(first[2]);
  REQUIRE(direct);
  CHECK(c.Decode(5, first[2]).fields() ==
        proto::SnowflakeFieldsWire{direct->time_ms, direct->worker, direct->sequence});
}

TEST_CASE_FIXTURE(
    GrantedWorld,
    "binary snowflake: argument errors are INVALID_ARGUMENT and the connection stays open") {
  Frame zero = c.Next(1, 0);
  CHECK(zero.status() == WireStatus::kInvalidArgument);
  CHECK(zero.message().find("count") != std::string::npos);
  CHECK(c.Next(2, kMaxCount + 1).status() == WireStatus::kInvalidArgument);
  CHECK(c.Next(3, 0xFFFFFFFF).status() == WireStatus::kInvalidArgument);
  CHECK(c.Next(4, proto::kMaxSnowflakeIdsPerFrame + 1).status() == WireStatus::kInvalidArgument);

  // Payloads that are not exactly the encoding.
  Frame short_count = c.Raw(proto::kOpSnowflake, 5, std::string("\0\1", 2));
  CHECK(short_count.status() == WireStatus::kInvalidArgument);
  CHECK(short_count.message() == "SNOWFLAKE payload must be u32 count");
  CHECK(c.Raw(proto::kOpSnowflake, 6, std::string("\0\0\0\1\0", 5)).status() ==
        WireStatus::kInvalidArgument);
  CHECK(c.Raw(proto::kOpSnowflake, 7, "").status() == WireStatus::kInvalidArgument);
  Frame short_id = c.Raw(proto::kOpSnowflakeDecode, 8, std::string("\0\0\0\1", 4));
  CHECK(short_id.status() == WireStatus::kInvalidArgument);
  CHECK(short_id.message() == "SNOWFLAKE_DECODE payload must be i64 id");
  CHECK(c.Raw(proto::kOpSnowflakeDecode, 9, std::string(9, '\0')).status() ==
        WireStatus::kInvalidArgument);

  // IDs outside the layout (53 bits here) do not decode.
  CHECK(c.Decode(10, -1).status() == WireStatus::kInvalidArgument);
  CHECK(c.Decode(11, w.front.generator.layout().max_id() + 1).status() ==
        WireStatus::kInvalidArgument);
  CHECK(c.Decode(12, w.front.generator.layout().max_id()).status() == WireStatus::kOk);

  CHECK(c.Next(13, kPerMs).ids().size() == kPerMs);
}

TEST_CASE("binary snowflake: without a grant SNOWFLAKE is NOT_SERVING; DECODE still works") {
  World w;
  REQUIRE(w.listening);
  Client c(w.server.port());
  REQUIRE(c.connected());
  Frame r = c.Next(1, 1);
  CHECK(r.status() == WireStatus::kNotServing);
  CHECK_FALSE(r.message().empty());
  CHECK(c.Decode(2, 12345).status() == WireStatus::kOk);

  w.front.Grant();
  CHECK(c.Next(3, 1).ids().size() == 1);
  w.front.generator.Revoke("worker id lease lost");
  Frame revoked = c.Next(4, 1);
  CHECK(revoked.status() == WireStatus::kNotServing);
  CHECK(revoked.message().find("worker id lease lost") != std::string::npos);
}

TEST_CASE_FIXTURE(
    GrantedWorld,
    "binary snowflake: a parked request is answered from another thread, out of order") {
  const std::vector<int64_t> full = c.Next(1, kPerMs).ids();  // this millisecond's sequence
  REQUIRE(full.size() == kPerMs);
  std::string parked;
  proto::AppendSnowflakeRequest(parked, 2, 3);
  c.Send(parked);
  CHECK_FALSE(c.Read(200ms));  // waits for the next millisecond

  // A PING sent after it is answered first.
  std::string ping;
  proto::AppendFrame(ping, proto::Opcode::kPing, 0, 3, "p");
  c.Send(ping);
  std::optional<Frame> pong = c.Read();
  REQUIRE(pong);
  CHECK(pong->request_id == 3);

  // Time passes on this thread: the generator's timer answers the request
  // here, and the server moves the answer to the connection's strand.
  w.front.wall.Advance(1);
  w.front.clock.Advance(1ms);
  std::optional<Frame> late = c.Read();
  REQUIRE(late);
  CHECK(late->request_id == 2);
  CHECK(late->opcode == static_cast<uint8_t>(proto::kOpSnowflake));
  const std::vector<int64_t> ids = late->ids();
  REQUIRE(ids.size() == 3);
  CHECK(ids.front() > full.back());
  CHECK(c.Decode(4, ids.back()).fields().time_ms == kT0 + 1);
}

TEST_CASE_FIXTURE(
    GrantedWorld,
    "binary snowflake: Stop() waits for a parked request; generator shutdown answers it") {
  REQUIRE(c.Next(1, kPerMs).ids().size() == kPerMs);
  std::string parked;
  proto::AppendSnowflakeRequest(parked, 2, 1);
  c.Send(parked);
  CHECK_FALSE(c.Read(100ms));

  auto done = std::make_shared<std::promise<void>>();
  std::future<void> drained = done->get_future();
  w.server.Stop([done] { done->set_value(); });
  // The parked request keeps its connection open.
  CHECK(drained.wait_for(200ms) == std::future_status::timeout);
  w.front.generator.Shutdown();
  std::optional<Frame> r = c.Read();
  REQUIRE(r);
  CHECK(r->request_id == 2);
  CHECK(r->status() == WireStatus::kShuttingDown);
  CHECK(c.WaitClosedDiscarding(5s));
  CHECK(drained.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("binary snowflake: without a generator both ops are UNKNOWN_OPCODE") {
  PlainWorld w;
  REQUIRE(w.listening);
  Client c(w.server.port());
  REQUIRE(c.connected());
  CHECK(c.Next(1, 1).status() == WireStatus::kUnknownOpcode);
  CHECK(c.Decode(2, 1).status() == WireStatus::kUnknownOpcode);
  // 0x12..0x1F are reserved: unknown with a generator too (below).
}

TEST_CASE("binary snowflake: reserved opcodes 0x12-0x1F stay UNKNOWN_OPCODE") {
  World w;
  REQUIRE(w.listening);
  Client c(w.server.port());
  REQUIRE(c.connected());
  for (int op = 0x12; op <= 0x1F; ++op) {
    INFO(op);
    CHECK(c.Raw(static_cast<proto::Opcode>(op), static_cast<uint32_t>(op), "").status() ==
          WireStatus::kUnknownOpcode);
  }
}

TEST_CASE("binary snowflake: requests are counted as op snowflake and snowflake_decode") {
  World w;
  REQUIRE(w.listening);
  Metrics& metrics = w.front.services.metrics();
  Client c(w.server.port());
  REQUIRE(c.connected());
  CHECK(c.Next(1, 1).status() == WireStatus::kNotServing);
  w.front.Grant();
  CHECK(c.Next(2, 2).status() == WireStatus::kOk);
  CHECK(c.Next(3, 2).status() == WireStatus::kOk);  // 4 in all: no wait for the next ms
  CHECK(c.Next(4, 0).status() == WireStatus::kInvalidArgument);
  CHECK(c.Raw(proto::kOpSnowflake, 5, "").status() == WireStatus::kInvalidArgument);
  CHECK(c.Decode(6, 1).status() == WireStatus::kOk);
  CHECK(c.Decode(7, -1).status() == WireStatus::kInvalidArgument);

  const std::string text = metrics.Render();
  const std::string prefix = R"(seqd_requests_total{interface="binary",)";
  CHECK(Has(text, prefix + R"(op="snowflake",status="ok"} 2)"));
  CHECK(Has(text, prefix + R"(op="snowflake",status="not_serving"} 1)"));
  CHECK(Has(text, prefix + R"(op="snowflake",status="invalid_argument"} 2)"));
  CHECK(Has(text, prefix + R"(op="snowflake_decode",status="ok"} 1)"));
  CHECK(Has(text, prefix + R"(op="snowflake_decode",status="invalid_argument"} 1)"));
}
