// Each listener (HTTP, binary, RESP) on stub services: the protocol layers
// alone. This program links the listener libraries and the seam, and no
// allocator, message service, router or store (tests/listeners/
// CMakeLists.txt): that it links at all shows the listeners need nothing
// behind the seam, and each case shows a request going through one
// listener to the seam and back.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "proto/binary_codec.h"
#include "server/http/api_router.h"
#include "server/http/http_server.h"
#include "server/resp/resp_server.h"
#include "server/binary/binary_server.h"
#include "tests/listeners/stub_services.h"

namespace seqd::stub {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// One io_context run by a thread of its own for as long as the test lives.
class Running {
 public:
  Running() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~Running() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  asio::io_context& io() { return io_; }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

// Writes `request` to 127.0.0.1:`port`, then reads until `whole` says the
// answer is complete; every read waits 5 s at the most.
std::string Exchange(uint16_t port, const std::string& request,
                     const std::function<bool(const std::string&)>& whole) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  timeval five_seconds{5, 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &five_seconds, sizeof five_seconds);
  asio::write(socket, asio::buffer(request));
  std::string answer;
  char buf[4096];
  while (!whole(answer)) {
    boost::system::error_code ec;
    const size_t n = socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    answer.append(buf, n);
  }
  return answer;
}

bool HttpWhole(const std::string& s) {
  const size_t head_end = s.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  const size_t at = s.find("Content-Length: ");
  if (at == std::string::npos || at > head_end) return true;
  const size_t length = std::stoul(s.substr(at + 16));
  return s.size() >= head_end + 4 + length;
}

std::string HttpBody(const std::string& answer) {
  const size_t head_end = answer.find("\r\n\r\n");
  return head_end == std::string::npos ? std::string() : answer.substr(head_end + 4);
}

TEST_CASE("HTTP on stub services: GET /seq/{key} asks the seam once and answers its IDs") {
  StubServices stubs;
  Running loop;
  ApiRouter router(stubs.services, RouterOptions{"stub", std::chrono::steady_clock::now()});
  HttpServer server(loop.io(), HttpOptions(), router);
  REQUIRE(server.Listen());

  const std::string first =
      Exchange(server.port(), "GET /seq/k?count=3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
               HttpWhole);
  CHECK(first.starts_with("HTTP/1.1 200"));
  CHECK(HttpBody(first).find('1') != std::string::npos);
  CHECK(HttpBody(first).find('3') != std::string::npos);
  const std::string bad =
      Exchange(server.port(), "GET /seq/bad_key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
               HttpWhole);
  CHECK(bad.starts_with("HTTP/1.1 400"));

  const std::vector<StubIds::Asked> asked = stubs.ids.asked();
  REQUIRE(asked.size() == 2);
  CHECK(asked[0].key == "k");
  CHECK(asked[0].count == 3);
  CHECK(asked[1].key == "bad_key");
  CHECK(stubs.metrics.Count(Interface::kHttp, "seq", "ok") == 1);
  server.Stop([] {});
}

TEST_CASE("HTTP on stub services: a message send reaches the seam's MessageApi") {
  StubServices stubs;
  Running loop;
  ApiRouter router(stubs.services, RouterOptions{"stub", std::chrono::steady_clock::now()});
  HttpServer server(loop.io(), HttpOptions(), router);
  REQUIRE(server.Listen());
  const std::string body = R"({"sender_id":"u1","client_msg_id":"m1","payload":"hi"})";
  const std::string answer =
      Exchange(server.port(),
               "POST /conversations/c1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               "Content-Type: application/json\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body,
               HttpWhole);
  INFO(answer);
  CHECK(answer.starts_with("HTTP/1.1 201"));
  CHECK(HttpBody(answer).find("\"seq\":1") != std::string::npos);
  const std::vector<SendRequest> sent = stubs.messages.sent();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].conv_id == "c1");
  CHECK(sent[0].sender_id == "u1");
  CHECK(sent[0].client_msg_id == "m1");
  server.Stop([] {});
}

// Whole frames of `s`, decoded, while they last.
std::vector<proto::FrameView> Frames(const std::string& s) {
  std::vector<proto::FrameView> out;
  std::string_view rest = s;
  for (;;) {
    proto::DecodeResult r = proto::DecodeFrame(rest);
    if (r.state != proto::DecodeState::kFrame) return out;
    out.push_back(r.frame);
    rest.remove_prefix(r.consumed);
  }
}

TEST_CASE("Binary on stub services: NEXT_IDS runs through the seam, in order") {
  StubServices stubs;
  Running loop;
  BinaryServer server(loop.io(), BinaryServerOptions(), stubs.services);
  REQUIRE(server.Listen());
  std::string request;
  proto::AppendNextIdsRequest(request, 7, "k", 2);
  proto::AppendNextIdsRequest(request, 8, "k", 5);
  proto::AppendNextIdsRequest(request, 9, "bad_key", 1);
  const std::string answer =
      Exchange(server.port(), request, [](const std::string& s) { return Frames(s).size() >= 3; });
  const std::vector<proto::FrameView> frames = Frames(answer);
  REQUIRE(frames.size() == 3);
  std::vector<proto::IdRangeWire> ranges;
  for (int i = 0; i < 2; ++i) {
    CHECK(frames[i].request_id == static_cast<uint32_t>(7 + i));
    auto r = proto::ParseResponse(frames[i].payload);
    REQUIRE(r);
    REQUIRE(r->status == proto::Status::kOk);
    auto got = proto::ParseNextIdsResult(r->result);
    REQUIRE(got);
    ranges.insert(ranges.end(), got->begin(), got->end());
  }
  // Both asks of key k may be served as one take of 7: the IDs are 1..7 in
  // the order asked, either way.
  REQUIRE(!ranges.empty());
  CHECK(ranges.front().first == 1);
  CHECK(ranges.back().last == 7);
  auto refused = proto::ParseResponse(frames[2].payload);
  REQUIRE(refused);
  CHECK(refused->status == proto::Status::kInvalidArgument);
  server.Stop([] {});
}

TEST_CASE("RESP on stub services: INCR and INCRBY answer the seam's IDs") {
  StubServices stubs;
  Running loop;
  RespServer server(loop.io(), RespServerOptions(), stubs.services);
  REQUIRE(server.Listen());
  const std::string answer =
      Exchange(server.port(), "INCR k\r\nINCR k\r\nINCRBY k 10\r\nINCR bad_key\r\n",
               [](const std::string& s) {
                 size_t lines = 0;
                 for (size_t at = 0; (at = s.find("\r\n", at)) != std::string::npos; at += 2)
                   ++lines;
                 return lines >= 4;
               });
  CHECK(answer.starts_with(":1\r\n:2\r\n:12\r\n-"));
  const std::vector<StubIds::Asked> asked = stubs.ids.asked();
  REQUIRE(asked.size() >= 3);
  CHECK(asked.back().key == "bad_key");
  bool block_asked = false;
  for (const StubIds::Asked& a : asked) block_asked |= a.contiguous && a.count == 10;
  CHECK(block_asked);
  server.Stop([] {});
}

}  // namespace
}  // namespace seqd::stub
