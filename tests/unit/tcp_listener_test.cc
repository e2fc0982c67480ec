// TcpListener's hand-over of a connection from one session to the next (as
// an HTTP session hands an event stream to an SseSession): the connection
// keeps its one place in the listener's count, the server's stop reaches
// whichever session holds it, and the drain waits for that one.
#include "server/net/tcp_listener.h"

#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>
#include <optional>

using namespace seqd;
namespace net = boost::asio;

namespace {

// A session that records what the listener tells it, and can hand its
// place to another.
class RecordingSession : public ListenedSession {
 public:
  void Start(bool reject) override {
    started = true;
    rejected = reject;
  }
  void Stop() override { ++stops; }
  void HandTo(const std::shared_ptr<ListenedSession>& next) { HandOverTo(next); }

  std::atomic<bool> started{false};
  bool rejected = false;
  std::atomic<int> stops{0};
};

// A listener on loopback whose sessions are RecordingSessions; the first
// one made is kept by the fixture (so it lives until the test drops it).
struct ListenerFixture {
  ListenerFixture() {
    listener = std::make_shared<TcpListener>(
        io,
        TcpListenerOptions{.name = "test", .address = "127.0.0.1", .port = 0, .max_connections = 4},
        [this](TcpListener::Socket socket) {
          auto s = std::make_shared<RecordingSession>();
          socket_ = std::move(socket);
          first = s;
          return s;
        });
    REQUIRE(listener->Listen().ok());
  }

  // Connects a client and runs the io_context until the session started.
  void Connect() {
    client.connect({net::ip::make_address("127.0.0.1"), listener->port()});
    for (int i = 0; i < 2000 && !(first && first->started); ++i) {
      io.run_for(std::chrono::milliseconds(1));
    }
    REQUIRE(first);
    REQUIRE(first->started);
  }

  net::io_context io;
  std::shared_ptr<TcpListener> listener;
  std::shared_ptr<RecordingSession> first;
  std::optional<TcpListener::Socket> socket_;
  net::ip::tcp::socket client{io};
};

}  // namespace

TEST_CASE("TcpListener: a handed-over connection keeps its place; stop and drain follow it") {
  ListenerFixture f;
  f.Connect();
  CHECK(f.listener->open_connections() == 1);

  auto next = std::make_shared<RecordingSession>();
  f.first->HandTo(next);
  f.first.reset();  // the old session is gone: the connection is not unregistered
  CHECK(f.listener->open_connections() == 1);

  bool drained = false;
  f.listener->Stop([&drained] { drained = true; });
  CHECK(next->stops == 1);  // the stop reached the session holding the connection
  f.io.run_for(std::chrono::milliseconds(20));
  CHECK_FALSE(drained);  // it still holds the connection

  next.reset();  // the new session ends: the listener is drained
  CHECK(f.listener->open_connections() == 0);
  for (int i = 0; i < 200 && !drained; ++i) {
    f.io.restart();  // it ran out of work once the acceptor closed
    f.io.run_for(std::chrono::milliseconds(1));
  }
  CHECK(drained);
}

TEST_CASE("TcpListener: a hand-over while the listener stops tells the new session to stop") {
  ListenerFixture f;
  f.Connect();
  f.listener->Stop(nullptr);
  CHECK(f.first->stops == 1);

  auto next = std::make_shared<RecordingSession>();
  f.first->HandTo(next);  // the stop was already sent to the old session
  CHECK(next->stops == 1);
  CHECK(f.listener->open_connections() == 1);
}

TEST_CASE("TcpListener: a session not registered hands over nothing") {
  auto lone = std::make_shared<RecordingSession>();
  auto next = std::make_shared<RecordingSession>();
  lone->HandTo(next);
  CHECK(next->stops == 0);
  CHECK_FALSE(next->started);
}
