// Shared test world for the server tests over real loopback sockets
// (http_server_test, binary_server_test, resp_server_test): a server on
// 127.0.0.1 with an ephemeral port, its io_context on background threads, an
// allocator over an in-memory store, and blocking-style clients whose every
// read has a deadline.
#pragma once

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/base/asio_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_rules.h"
#include "server/core/segment_allocator.h"
#include "server/net/io_ring.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/test_services.h"
#include "tests/unit/wait_for.h"

namespace seqd::nettest {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// WaitFor(pred, timeout) of tests/unit/wait_for.h, also found through
// nettest (a `using namespace seqd::nettest` or a nettest:: name).
using seqd::WaitFor;

// Allocator options whose wait deadline never fires in a test.
inline AllocatorOptions LongDeadline() {
  AllocatorOptions o;
  o.wait_deadline = 30s;
  return o;
}

// A blocking-style loopback TCP client. It owns a private io_context that
// runs only inside ReadSome(), on the calling thread, so a client must be
// used by one thread at a time; reads never block past their deadline.
// Protocol clients derive from it and parse buffer().
class LoopbackClient {
 public:
  // Connects to 127.0.0.1:`port`; connected() tells whether that worked.
  // Each ReadSome() takes at most `read_chunk` bytes.
  LoopbackClient(uint16_t port, size_t read_chunk) : sock_(io_), chunk_(read_chunk) {
    error_code ec;
    sock_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    connected_ = !ec;
  }

  bool connected() const { return connected_; }

  // Writes all of `data`; errors are ignored (the reads will notice).
  void Send(std::string_view data) {
    error_code ec;
    net::write(sock_, net::buffer(data.data(), data.size()), ec);
  }

  void ShutdownSend() {
    error_code ec;
    sock_.shutdown(tcp::socket::shutdown_send, ec);
  }

  void Close() {
    error_code ec;
    sock_.close(ec);
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout`; anything it still sends is discarded.
  bool WaitClosedDiscarding(SteadyClock::duration timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      error_code ec = ReadSome(deadline);
      if (ec == net::error::timed_out) return false;
      if (ec) return true;
      buffer_.clear();
    }
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout` and no unread bytes are buffered when it does.
  bool WaitClosedSilent(SteadyClock::duration timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      error_code ec = ReadSome(deadline);
      if (ec == net::error::timed_out) return false;
      if (ec) return buffer_.empty();
    }
  }

 protected:
  // One read of whatever arrives before `deadline`, appended to buffer().
  // Returns net::error::timed_out if nothing completed in time (the read is
  // cancelled first), else the read's own error (eof, reset, ...) or success.
  error_code ReadSome(SteadyClock::time_point deadline) {
    std::optional<error_code> result;
    size_t got = 0;
    sock_.async_read_some(net::buffer(chunk_), [&](error_code ec, size_t n) {
      result = ec;
      got = n;
    });
    io_.restart();
    io_.run_until(deadline);
    if (!result) {
      sock_.cancel();
      io_.restart();
      io_.run();
      buffer_.append(chunk_.data(), got);
      return net::error::timed_out;
    }
    buffer_.append(chunk_.data(), got);
    return *result;
  }

  std::string& buffer() { return buffer_; }
  const std::string& buffer() const { return buffer_; }
  tcp::socket& socket() { return sock_; }

 private:
  net::io_context io_;
  tcp::socket sock_;
  bool connected_ = false;
  std::vector<char> chunk_;  // scratch space for one read
  std::string buffer_;       // received, not yet consumed
};

// The default store stack: FaultyStore directly over the MemoryStore.
struct NoLayer {
  explicit NoLayer(SegmentStore& inner) : inner(inner) {}
  SegmentStore& inner;
};
inline SegmentStore& LayerStore(NoLayer& layer) { return layer.inner; }
inline SegmentStore& LayerStore(SegmentStore& layer) { return layer; }

// The default server front: the server is built on a Services seam around
// the allocator (test_services.h; snowflake off, messages in memory).
struct AllocatorFront {
  AllocatorFront(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : services(store, db, allocator), target(services) {}
  TestServices services;
  const Services& target;
};

// Put in Options::connections to ask ServerWorld for the App's layout (one
// io_context per network thread); the world puts its own ring there.
inline IoRing* PerThreadIo() {
  static net::io_context unused;
  static IoRing marker({&unused});
  return &marker;
}

// Runs the calling test once per io layout, as doctest subcases: one
// io_context on two threads, then one io_context per thread (the App's).
// Returns `options` set for the layout of this run.
template <typename Options>
Options EachIoLayout(Options options) {
  SUBCASE("shared io_context") {}
  SUBCASE("an io_context per thread") { options.connections = PerThreadIo(); }
  return options;
}

// Connects a Client to `port`, sends nothing, and checks the server closes
// the connection at its idle timeout of 1 s: not before 0.9 s, within 3 s.
template <typename Client>
void CheckSilentConnectionClosedAtOneSecond(uint16_t port) {
  const auto start = SteadyClock::now();
  Client idle(port);
  REQUIRE(idle.connected());
  CHECK(idle.WaitClosed(4s));
  const auto took = SteadyClock::now() - start;
  CHECK(took >= 900ms);
  CHECK(took < 3s);
}

// Calls world.server.Stop() while one request is in flight (parked on the
// held store) and `idle` is an idle connection on it, and checks what the
// stop does before that request is answered: `idle` is closed within 2 s,
// the drain does not finish, one connection stays open, and a new
// connection is not served. Returns a future that is ready once the server
// has drained.
template <typename World, typename Client>
std::future<void> StopWithOneInFlight(World& world, Client& idle) {
  auto drained = std::make_shared<std::promise<void>>();
  std::future<void> drained_future = drained->get_future();
  world.server.Stop([drained] { drained->set_value(); });

  CHECK(idle.WaitClosed(2s));
  CHECK(drained_future.wait_for(200ms) == std::future_status::timeout);
  CHECK(world.server.open_connections() == 1);

  Client late(world.server.port());
  if (late.connected()) CHECK(late.WaitClosed(2s));
  return drained_future;
}

// After StopWithOneInFlight and the answer to the request in flight on
// `busy`: checks `busy` is then closed, the server drains within 5 s, and
// no connection is left open.
template <typename World, typename Client>
void CheckStopFinishes(World& world, Client& busy, std::future<void>& drained) {
  CHECK(busy.WaitClosed());
  CHECK(drained.wait_for(5s) == std::future_status::ready);
  CHECK(world.server.open_connections() == 0);
}

// One server under test and everything beneath it.
//
//   Server   the server type, constructed as Server(io, Options, front.target)
//   Options  its options; address and port are forced to 127.0.0.1:0
//   Front    built from (store, db, allocator) before the server and exposing
//            `target`, what the server is constructed on (AllocatorFront: a
//            Services seam; a router front for HTTP)
//   Layer    a SegmentStore decorator constructed over `mem` and under
//            `store` (NoLayer: none)
//
// Guarantees:
//  * Store stack: mem <- layer <- store (FaultyStore) <- allocator. Tests
//    create keys in `mem` directly and inject faults through `store`.
//  * Threads: the server's io_context runs on 2 background threads (1 if
//    the options say single_threaded) from the end of the constructor until
//    the destructor; a work guard keeps them
//    alive while idle. With options.connections set (PerThreadIo()), as in
//    the App: `io` runs on 1 thread and `io2` on another, and the server
//    spreads its connections over both (`ring`: io, io2, io, ...). Store calls run on `db`, a
//    2-thread pool. The allocator's timers run on `io` through `clock`.
//  * Startup: Listen() is called once in the constructor; `listening` says
//    whether it worked (tests REQUIRE it), and server.port() is the port.
//  * Teardown, in order: store faults are cleared (hold and down off, so
//    parked work can finish); server.Stop() is called and must report drained
//    within 5 s (a CHECK); the work guard is dropped, io stopped and its
//    threads joined; the db pool is stopped. Only then are members destroyed,
//    in reverse declaration order: server, front, allocator, clock, db, the
//    store stack, io. So nothing the server or allocator uses dies while a
//    thread can still reach it.
template <typename Server, typename Options, typename Front = AllocatorFront,
          typename Layer = NoLayer>
struct ServerWorld {
  explicit ServerWorld(Options options = {}, AllocatorOptions alloc_options = LongDeadline(),
                       KeyRules rules = KeyRules())
      : per_thread(options.connections != nullptr),
        io_threads(per_thread ? 1 : IoThreads(options)),
        layer(mem),
        store(LayerStore(layer)),
        clock(io),
        allocator(store, db, clock, std::move(rules), alloc_options),
        front(store, db, allocator),
        server(io, Loopback(std::move(options)), front.target) {
    listening = server.Listen().ok();
    for (int i = 0; i < io_threads; ++i) threads.emplace_back([this] { io.run(); });
    if (per_thread) threads.emplace_back([this] { io2.run(); });
  }

  ~ServerWorld() {
    store.SetHold(false);
    store.SetDown(false);
    std::promise<void> drained;
    server.Stop([&] { drained.set_value(); });
    CHECK(drained.get_future().wait_for(5s) == std::future_status::ready);
    work.reset();
    work2.reset();
    io.stop();
    io2.stop();
    for (auto& t : threads) t.join();
    db.Stop();
  }

  ServerWorld(const ServerWorld&) = delete;
  ServerWorld& operator=(const ServerWorld&) = delete;

  // io2 before io: destroyed after it, since io's pending accept may still
  // own a socket bound to a strand on io2 (as the App orders them).
  net::io_context io2{1};  // runs only with per_thread, on a thread of its own
  net::executor_work_guard<net::io_context::executor_type> work2 = net::make_work_guard(io2);
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(io);
  IoRing ring{{&io, &io2}};
  const bool per_thread;  // the App's layout: connections spread over `ring`
  const int io_threads;   // running io: 2, or 1 for a single-threaded server or per_thread
  MemoryStore mem;
  Layer layer;
  FaultyStore store;
  ThreadPoolRunner db{2};
  AsioClock clock;
  SegmentAllocator allocator;
  Front front;
  Server server;
  bool listening = false;
  std::vector<std::thread> threads;

 private:
  static int IoThreads(const Options& options) {
    if constexpr (requires { options.single_threaded; }) return options.single_threaded ? 1 : 2;
    return 2;
  }
  Options Loopback(Options options) {
    options.address = "127.0.0.1";
    options.port = 0;
    if (options.connections) options.connections = &ring;
    return options;
  }
  // Last: the database thread is done before anything above goes.
  StopRunnerOnExit stop_db{db};
};

}  // namespace seqd::nettest
