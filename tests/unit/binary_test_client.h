// BinaryServer tests' side of the wire: a blocking-style loopback client
// with deadlines (plain Asio), its decoded frames, request builders, and
// the server world they run against (a server io_context on background
// threads, a thread pool for the store).
//
// Thread safety: a Client is used by one test thread (SendInBackground
// writes through a duplicate descriptor on its own thread).
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proto/binary_codec.h"
#include "server/binary/binary_server.h"
#include "tests/unit/net_test_support.h"

namespace seqd::binarytest {

using namespace seqd::nettest;
using namespace std::chrono_literals;
using proto::Opcode;
using WireStatus = proto::Status;

// A decoded frame that owns its payload.
struct Frame {
  uint8_t opcode = 0;
  uint16_t flags = 0;
  uint32_t request_id = 0;
  std::string payload;

  // The payload read as a response; REQUIREs that it parses.
  proto::ResponseView response() const {
    auto r = proto::ParseResponse(payload);
    REQUIRE(r);
    return *r;
  }
  WireStatus status() const { return response().status; }
  std::string message() const { return std::string(response().message); }
  std::string result() const {
    proto::ResponseView r = response();
    REQUIRE(r.status == WireStatus::kOk);
    return std::string(r.result);
  }
  std::vector<proto::IdRangeWire> ranges() const {
    auto r = proto::ParseNextIdsResult(result());
    REQUIRE(r);
    return *r;
  }
};

// A blocking-style client whose every read has a deadline.
class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 16384) {}

  // Writes `data` on another thread through a duplicate descriptor, so the
  // socket object itself is never used by two threads.
  std::thread SendInBackground(std::string data) {
    const int fd = ::dup(socket().native_handle());
    return std::thread([fd, data = std::move(data)] {
      net::io_context io;
      tcp::socket s(io);
      error_code ec;
      s.assign(tcp::v4(), fd, ec);
      if (!ec) net::write(s, net::buffer(data), ec);
    });
  }

  // One frame, or nullopt on close/error/timeout.
  std::optional<Frame> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      proto::DecodeResult r = proto::DecodeFrame(buffer());
      if (r.state == proto::DecodeState::kFrame) {
        Frame f{r.frame.opcode, r.frame.flags, r.frame.request_id, std::string(r.frame.payload)};
        CHECK(r.frame.is_response());
        buffer().erase(0, r.consumed);
        return f;
      }
      REQUIRE(r.state == proto::DecodeState::kNeedMore);  // the server sends valid frames
      if (ReadSome(deadline)) return std::nullopt;
    }
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout`; anything it still sends is discarded.
  bool WaitClosed(SteadyClock::duration timeout = 5s) { return WaitClosedDiscarding(timeout); }

  // Bytes received but not yet returned as frames.
  const std::string& pending() const { return buffer(); }
};

inline std::string Ping(uint32_t id, std::string_view payload) {
  std::string out;
  proto::AppendFrame(out, Opcode::kPing, 0, id, payload);
  return out;
}

inline std::string NextIds(uint32_t id, std::string_view key, uint32_t count) {
  std::string out;
  proto::AppendNextIdsRequest(out, id, key, count);
  return out;
}

inline std::string Hex(std::string_view hex) {
  std::string out;
  std::string digits;
  for (char c : hex) {
    if (c != ' ') digits.push_back(c);
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

using ServerFixture = ServerWorld<BinaryServer, BinaryServerOptions>;

// Sends one request and reads its response; checks the echoed header.
inline Frame RoundTrip(Client& c, const std::string& request) {
  proto::DecodeResult req = proto::DecodeFrame(request);
  REQUIRE(req.state == proto::DecodeState::kFrame);
  c.Send(request);
  std::optional<Frame> f = c.Read();
  REQUIRE(f);
  CHECK(f->request_id == req.frame.request_id);
  CHECK(f->opcode == req.frame.opcode);
  CHECK(f->flags == proto::kFlagResponse);
  return *f;
}

// Reads a protocol error frame, then expects the connection to close.
inline void ExpectProtocolError(Client& c, WireStatus want) {
  std::optional<Frame> f = c.Read();
  REQUIRE(f);
  CHECK(f->opcode == 0);
  CHECK(f->request_id == 0);
  CHECK(f->flags == proto::kFlagResponse);
  CHECK(f->status() == want);
  CHECK_FALSE(f->message().empty());
  CHECK(c.WaitClosed());
}

}  // namespace seqd::binarytest
