// RespServer over real loopback sockets: a server io_context on background
// threads, an allocator over MemoryStore on a thread pool, plain Asio
// clients whose every read has a deadline.
#include "server/resp/resp_server.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proto/resp_codec.h"
#include "server/core/key_rules.h"
#include "server/metrics/metrics.h"
#include "tests/unit/net_test_support.h"
#include "tests/unit/test_stores.h"

using namespace seqd;
using namespace seqd::nettest;
using namespace std::chrono_literals;

namespace {

// RESP's answer for a key with no row and no rule: the one text of
// UnknownKeyError.
std::string UnknownKeyReply(std::string_view key) {
  return "-ERR " + UnknownKeyError(key).message + "\r\n";
}

// Acts as a second server sharing the table: for keys starting with "gap",
// takes 5 IDs before every reservation, so no two of our segments are
// adjacent. Records the segments it hands out.
class GappyStore final : public ForwardingSegmentStore {
 public:
  explicit GappyStore(SegmentStore& inner) : ForwardingSegmentStore(inner) {}
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    if (key.starts_with("gap")) {
      if (auto stolen = inner().Reserve(key, 5); !stolen) return stolen.error();
    }
    auto r = inner().Reserve(key, step);
    if (r) {
      std::lock_guard lock(mu_);
      segments_.push_back(IdRange{r->first, r->last});
    }
    return r;
  }

  // True if [first, last] lies inside one segment we handed out.
  bool InOneSegment(int64_t first, int64_t last) const {
    std::lock_guard lock(mu_);
    return std::any_of(segments_.begin(), segments_.end(),
                       [&](const IdRange& s) { return s.first <= first && last <= s.last; });
  }

 private:
  mutable std::mutex mu_;
  std::vector<IdRange> segments_;  // guarded by mu_
};

// Length of the first complete RESP reply at `at` in `b`, or 0.
size_t ReplyLength(const std::string& b, size_t at = 0) {
  if (at >= b.size()) return 0;
  const size_t eol = b.find("\r\n", at);
  if (eol == std::string::npos) return 0;
  const size_t line = eol + 2 - at;
  switch (b[at]) {
    case '+':
    case '-':
    case ':':
      return line;
    case '$': {
      const long long len = std::stoll(b.substr(at + 1, eol - at - 1));
      if (len < 0) return line;
      const size_t total = line + static_cast<size_t>(len) + 2;
      return b.size() - at >= total ? total : 0;
    }
    case '*': {
      const long long n = std::stoll(b.substr(at + 1, eol - at - 1));
      size_t total = line;
      for (long long i = 0; i < n; ++i) {
        const size_t one = ReplyLength(b, at + total);
        if (one == 0) return 0;
        total += one;
      }
      return total;
    }
    default:
      FAIL("not a RESP reply: " << b.substr(at, 40));
      return 0;
  }
}

// A blocking-style RESP client whose every read has a deadline.
class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 65536) {}

  // One whole reply (raw bytes), or nullopt on close/error/timeout.
  std::optional<std::string> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    std::string& buf = buffer();
    size_t n;
    while ((n = ReplyLength(buf)) == 0) {
      if (ReadSome(deadline)) return std::nullopt;
    }
    std::string reply = buf.substr(0, n);
    buf.erase(0, n);
    return reply;
  }

  // Sends `command` and returns the reply ("" if none came).
  std::string Call(std::string_view command) {
    Send(command);
    return Read().value_or("");
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout` without sending anything more.
  bool WaitClosed(SteadyClock::duration timeout = 5s) { return WaitClosedSilent(timeout); }
};

std::string Cmd(std::vector<std::string> words) {
  std::string out;
  resp::AppendArrayHeader(out, static_cast<int64_t>(words.size()));
  for (const std::string& w : words) resp::AppendBulk(out, w);
  return out;
}

// The value of an integer reply; fails the test otherwise.
int64_t Int(const std::optional<std::string>& reply) {
  REQUIRE(reply);
  REQUIRE_MESSAGE(reply->size() > 3, *reply);
  REQUIRE_MESSAGE((*reply)[0] == ':', *reply);
  return std::stoll(reply->substr(1));
}

// A world whose store stack has GappyStore between MemoryStore and
// FaultyStore (reachable as `layer`), whose "auto_" keys are created on first
// use with step 50, and which always has key "k" with step 1000.
struct Fixture : ServerWorld<RespServer, RespServerOptions, AllocatorFront, GappyStore> {
  explicit Fixture(RespServerOptions options = {}, AllocatorOptions alloc_options = LongDeadline())
      : ServerWorld(std::move(options), alloc_options, KeyRules({{"auto_", 50}})) {
    REQUIRE(mem.CreateKey("k", 1000, ""));
  }
};

}  // namespace

TEST_CASE("resp server: INCR returns successive IDs, both request forms, any case") {
  Fixture f;
  REQUIRE(f.listening);
  REQUIRE(f.server.port() != 0);
  Client c(f.server.port());
  REQUIRE(c.connected());
  CHECK(c.Call(Cmd({"INCR", "k"})) == ":1\r\n");
  CHECK(c.Call(Cmd({"incr", "k"})) == ":2\r\n");
  CHECK(c.Call("InCr k\r\n") == ":3\r\n");
  // Auto-created key: the first call waits for the row to be created.
  CHECK(c.Call(Cmd({"INCR", "auto_a"})) == ":1\r\n");
  CHECK(c.Call(Cmd({"INCR", "auto_a"})) == ":2\r\n");
  CHECK(f.server.open_connections() == 1);
}

TEST_CASE("resp server: INCRBY returns the last of a contiguous block") {
  Fixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  CHECK(Int(c.Call(Cmd({"INCR", "k"}))) == 1);
  CHECK(Int(c.Call(Cmd({"INCRBY", "k", "100"}))) == 101);  // caller owns [2, 101]
  CHECK(Int(c.Call(Cmd({"INCR", "k"}))) == 102);
  CHECK(Int(c.Call("incrby k 1\r\n")) == 103);
  // max_count, more than both segments hold ([1, 1000] and [1001, 2000]): a
  // segment of its own; 104..2000 are skipped, never handed out.
  CHECK(Int(c.Call(Cmd({"INCRBY", "k", "10000"}))) == 12000);
  CHECK(Int(c.Call(Cmd({"INCR", "k"}))) == 12001);
}

TEST_CASE("resp server: INCRBY across non-adjacent segments still gets a contiguous block") {
  Fixture f;
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("gap1", 10, ""));
  Client c(f.server.port());
  // Segments: 5 stolen, then ours [6, 15]; 5 stolen, ours [21, 30]; ...
  CHECK(Int(c.Call(Cmd({"INCR", "gap1"}))) == 6);
  CHECK(Int(c.Call(Cmd({"INCRBY", "gap1", "8"}))) == 14);  // [7, 14]
  // 15 is left of [6, 15], too short for 5: skipped, and the block is
  // [21, 25] from the next segment (one segment per block).
  CHECK(Int(c.Call(Cmd({"INCRBY", "gap1", "5"}))) == 25);
  CHECK(Int(c.Call(Cmd({"INCR", "gap1"}))) == 26);

  // Many blocks over many boundaries: each lies in one of our segments and
  // no ID is handed out twice.
  REQUIRE(f.mem.CreateKey("gap2", 10, ""));
  std::set<int64_t> seen;
  int64_t prev = 0;
  for (int i = 0; i < 60; ++i) {
    const int64_t n = 1 + (i * 7) % 9;
    const int64_t last = Int(c.Call(Cmd({"INCRBY", "gap2", std::to_string(n)})));
    CHECK(last > prev);
    CHECK(f.layer.InOneSegment(last - n + 1, last));
    for (int64_t id = last - n + 1; id <= last; ++id) CHECK(seen.insert(id).second);
    const int64_t one = Int(c.Call(Cmd({"INCR", "gap2"})));
    CHECK(one > last);
    CHECK(seen.insert(one).second);
    prev = one;
  }
}

TEST_CASE("resp server: connections are spread over the io_contexts, round-robin") {
  RespServerOptions o;
  o.connections = PerThreadIo();
  Fixture f(o);
  REQUIRE(f.listening);
  Client first(f.server.port());  // on f.io
  CHECK(first.Call("PING\r\n") == "+PONG\r\n");
  // Hold io2's thread: only a connection on it waits.
  std::promise<void> release;
  std::shared_future<void> held = release.get_future().share();
  boost::asio::post(f.io2, [held] { held.wait(); });
  Client second(f.server.port());  // on f.io2
  second.Send("PING\r\n");
  CHECK(!second.Read(300ms));
  CHECK(first.Call("PING\r\n") == "+PONG\r\n");  // io still serves
  release.set_value();
  CHECK(second.Read() == "+PONG\r\n");
  Client third(f.server.port());  // on f.io again
  CHECK(third.Call("PING\r\n") == "+PONG\r\n");
}

TEST_CASE("resp server: 1000 pipelined commands in one write are answered in order") {
  Fixture f(EachIoLayout(RespServerOptions{}));
  REQUIRE(f.listening);
  Client c(f.server.port());
  std::string batch;
  for (int i = 0; i < 1000; ++i) {
    if (i % 100 == 50) {
      batch += "PING\r\n";
    } else if (i % 200 == 99) {
      batch += Cmd({"INCR", "k"});  // another key in between ends a run
    } else {
      batch += Cmd({"INCR", "auto_p"});  // the first run waits for the store
    }
  }
  c.Send(batch);
  int64_t last_p = 0, last_k = 0;
  for (int i = 0; i < 1000; ++i) {
    auto r = c.Read();
    REQUIRE(r);
    if (i % 100 == 50) {
      CHECK(*r == "+PONG\r\n");
    } else if (i % 200 == 99) {
      const int64_t v = Int(r);
      CHECK(v > last_k);
      last_k = v;
    } else {
      const int64_t v = Int(r);
      CHECK(v == last_p + 1);  // strictly increasing (and here contiguous)
      last_p = v;
    }
  }
  CHECK(last_p == 985);
}

TEST_CASE("resp server: pipelining beyond max_in_flight pauses reading, then resumes") {
  RespServerOptions o;
  o.max_in_flight = 3;
  Fixture f(o);
  REQUIRE(f.listening);
  Client c(f.server.port());
  std::string batch;
  for (int i = 0; i < 2000; ++i) batch += i % 2 ? Cmd({"INCR", "auto_q"}) : std::string("PING\r\n");
  c.Send(batch);
  int64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    auto r = c.Read();
    REQUIRE(r);
    if (i % 2) {
      const int64_t v = Int(r);
      CHECK(v == last + 1);
      last = v;
    } else {
      CHECK(*r == "+PONG\r\n");
    }
  }
}

TEST_CASE("resp server: PING, QUIT, COMMAND, CONFIG GET, unknown commands, arity") {
  Fixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  CHECK(c.Call(Cmd({"PING"})) == "+PONG\r\n");
  CHECK(c.Call("ping\r\n") == "+PONG\r\n");
  CHECK(c.Call(Cmd({"PING", "hello world"})) == "$11\r\nhello world\r\n");
  CHECK(c.Call(Cmd({"PING", ""})) == "$0\r\n\r\n");
  CHECK(c.Call(Cmd({"COMMAND"})) == "*0\r\n");
  CHECK(c.Call(Cmd({"COMMAND", "DOCS"})) == "*0\r\n");
  CHECK(c.Call(Cmd({"command", "count"})) == "*0\r\n");
  // What redis-benchmark reads at start; nothing else is known.
  CHECK(c.Call(Cmd({"CONFIG", "GET", "save"})) == "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  CHECK(c.Call(Cmd({"config", "get", "APPENDONLY"})) == "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  CHECK(c.Call(Cmd({"CONFIG", "GET", "maxmemory"})) == "*0\r\n");
  CHECK(c.Call(Cmd({"CONFIG", "SET", "save", ""})).starts_with("-ERR "));
  CHECK(c.Call(Cmd({"CONFIG"})) == "-ERR wrong number of arguments for 'config' command\r\n");
  CHECK(c.Call(Cmd({"HELLO", "3"})) == "-ERR unknown command 'HELLO'\r\n");
  CHECK(c.Call(Cmd({"GET", "auto_g"})) == "$-1\r\n");  // nothing of auto_g handed out yet (MAX_IDS)
  CHECK(c.Call(Cmd({"INCR", "auto_g"})) == ":1\r\n");
  CHECK(c.Call(Cmd({"GET", "auto_g"})) == "$1\r\n1\r\n");
  CHECK(c.Call(Cmd({"MGET", "auto_g", "none"})) == "*2\r\n$1\r\n1\r\n$-1\r\n");
  CHECK(c.Call(Cmd({"GET"})) == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(c.Call(Cmd({"SEQD.SETMINSEQ", "auto_g", "4"})) == "+OK\r\n");
  CHECK(c.Call(Cmd({"seqd.minseq", "auto_g", "none"})) == "*2\r\n:4\r\n:0\r\n");
  CHECK(c.Call(Cmd({"SEQD.SETMINSEQ", "auto_g"})) ==
        "-ERR wrong number of arguments for 'seqd.setminseq' command\r\n");
  CHECK(c.Call("flushall\r\n") == "-ERR unknown command 'flushall'\r\n");
  CHECK(c.Call(Cmd({"INCR"})) == "-ERR wrong number of arguments for 'incr' command\r\n");
  CHECK(c.Call(Cmd({"INCR", "k", "k"})) == "-ERR wrong number of arguments for 'incr' command\r\n");
  CHECK(c.Call(Cmd({"INCRBY", "k"})) == "-ERR wrong number of arguments for 'incrby' command\r\n");
  CHECK(c.Call(Cmd({"PING", "a", "b"})) == "-ERR wrong number of arguments for 'ping' command\r\n");
  for (const char* bad : {"0", "-1", "abc", "1.5", "", " 1", "99999999999999999999"}) {
    INFO(bad);
    CHECK(c.Call(Cmd({"INCRBY", "k", bad})) == "-ERR value is not an integer or out of range\r\n");
  }
  CHECK(c.Call(Cmd({"INCRBY", "k", "10001"})) == "-ERR count 10001 is over max_count 10000\r\n");
  // Empty commands get no reply; the connection carries on.
  c.Send("\r\n*0\r\n");
  CHECK(c.Call(Cmd({"INCR", "k"})) == ":1\r\n");
  // QUIT answers +OK and closes; what follows it is not executed.
  c.Send("PING\r\nQUIT\r\nINCR k\r\n");
  CHECK(c.Read() == "+PONG\r\n");
  CHECK(c.Read() == "+OK\r\n");
  CHECK(c.WaitClosed());
  CHECK(WaitFor([&] { return f.server.open_connections() == 0; }));
  Client d(f.server.port());
  CHECK(d.Call(Cmd({"INCR", "k"})) == ":2\r\n");
}

TEST_CASE("resp server: a bad INCR between INCRs of one key is answered in order (fuzz find)") {
  Fixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  // A run of INCR k, a wrong-arity INCR, then INCR k again: the run used to
  // stay open across the error and fill the error's slot, so the last INCR
  // was never answered.
  c.Send("INCR k\r\nINCR a b c\r\nINCR k\r\nINCR k\r\nPING\r\n");
  CHECK(c.Read() == ":1\r\n");
  CHECK(c.Read() == "-ERR wrong number of arguments for 'incr' command\r\n");
  CHECK(c.Read() == ":2\r\n");
  CHECK(c.Read() == ":3\r\n");
  CHECK(c.Read() == "+PONG\r\n");
}

TEST_CASE("resp server: key errors are clean -ERR replies") {
  AllocatorOptions ao = LongDeadline();
  ao.wait_deadline = 200ms;
  Fixture f({}, ao);
  REQUIRE(f.listening);
  Client c(f.server.port());
  CHECK(c.Call(Cmd({"INCR", "nosuch"})) == UnknownKeyReply("nosuch"));
  CHECK(c.Call(Cmd({"INCRBY", "nosuch", "5"})) == UnknownKeyReply("nosuch"));
  const std::string bad = c.Call(Cmd({"INCR", "bad\tkey!"}));
  CHECK(bad.starts_with("-ERR invalid key: "));
  CHECK(bad.find("control characters") != std::string::npos);
  CHECK(c.Call(Cmd({"INCR", std::string(256, 'a')})).starts_with("-ERR invalid key: "));
  CHECK(c.Call(Cmd({"INCR", ""})).starts_with("-ERR invalid key: "));
  // The reserved namespace answers as a bad key, with or without a row.
  REQUIRE(f.mem.CreateKey("seqd.server_msg_id", 10, "").ok());
  for (const char* key : {"seqd.server_msg_id", "seqd.x"}) {
    INFO(key);
    CHECK(c.Call(Cmd({"INCR", key})) ==
          "-ERR invalid key: keys starting with 'seqd.' are reserved\r\n");
    CHECK(c.Call(Cmd({"INCRBY", key, "3"})) ==
          "-ERR invalid key: keys starting with 'seqd.' are reserved\r\n");
  }
  CHECK(f.mem.GetKey("seqd.server_msg_id")->max_id == 1);
  // A pipelined run of INCRs on an unknown key: every one gets the error.
  c.Send(Cmd({"INCR", "nope"}) + Cmd({"INCR", "nope"}) + Cmd({"INCR", "k"}));
  CHECK(c.Read() == UnknownKeyReply("nope"));
  CHECK(c.Read() == UnknownKeyReply("nope"));
  CHECK(c.Read() == ":1\r\n");
  // Store down: no internals, just "store unavailable".
  f.store.SetDown(true);
  const std::string down = c.Call(Cmd({"INCR", "auto_down"}));
  CHECK(down.starts_with("-ERR store unavailable"));
  CHECK(down.find("injected") == std::string::npos);
  f.store.SetDown(false);
  CHECK(Int(c.Call(Cmd({"INCR", "k"}))) == 2);
}

TEST_CASE("resp server: a protocol error is answered, then the connection closes") {
  Fixture f;
  REQUIRE(f.listening);
  {
    Client c(f.server.port());
    c.Send(Cmd({"INCR", "k"}) + "*1\r\n+PING\r\n" + Cmd({"INCR", "k"}));
    CHECK(c.Read() == ":1\r\n");
    CHECK(c.Read() == "-ERR Protocol error: expected '$', got '+'\r\n");
    CHECK(c.WaitClosed());
  }
  for (std::string garbage : {std::string("*x\r\n"), std::string("*1\r\n$9999\r\n"),
                              std::string(5000, 'x'), std::string("*100\r\n")}) {
    INFO(garbage.substr(0, 20));
    Client c(f.server.port());
    c.Send(garbage);
    auto r = c.Read();
    REQUIRE(r);
    CHECK(r->starts_with("-ERR Protocol error: "));
    CHECK(c.WaitClosed());
  }
  // The ID after the failed connection's first INCR: the second never ran.
  Client c(f.server.port());
  CHECK(c.Call(Cmd({"INCR", "k"})) == ":2\r\n");
}

TEST_CASE("resp server: the client half-closing still gets its replies") {
  Fixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  c.Send(Cmd({"INCR", "auto_eof"}) + "PING\r\n");
  c.ShutdownSend();
  CHECK(c.Read() == ":1\r\n");
  CHECK(c.Read() == "+PONG\r\n");
  CHECK(c.WaitClosed());
}

TEST_CASE("resp server: idle connections are closed; active ones are not") {
  RespServerOptions o;
  o.idle_timeout = 1s;
  Fixture f(o);
  REQUIRE(f.listening);
  Client idle(f.server.port());
  Client busy(f.server.port());
  REQUIRE(idle.connected());
  const auto start = SteadyClock::now();
  std::this_thread::sleep_for(300ms);
  CHECK(!idle.WaitClosed(100ms));  // not before its time
  while (SteadyClock::now() - start < 1600ms) {
    CHECK(busy.Call("PING\r\n") == "+PONG\r\n");
    std::this_thread::sleep_for(200ms);
  }
  CHECK(idle.WaitClosed(2s));
  CHECK(busy.Call("PING\r\n") == "+PONG\r\n");
  CHECK(busy.WaitClosed(3s));
}

TEST_CASE("resp server: beyond max_connections new clients get an error") {
  RespServerOptions o;
  o.max_connections = 1;
  Fixture f(o);
  REQUIRE(f.listening);
  Client first(f.server.port());
  CHECK(first.Call("PING\r\n") == "+PONG\r\n");
  Client second(f.server.port());
  CHECK(second.Read() == "-ERR max number of clients reached\r\n");
  CHECK(second.WaitClosed());
  CHECK(first.Call("PING\r\n") == "+PONG\r\n");
}

TEST_CASE("resp server: Listen reports a bad address or a port in use") {
  Fixture f;
  REQUIRE(f.listening);
  RespServerOptions o;
  o.address = "not an address";
  RespServer bad(f.io, o, f.front.target);
  CHECK(!bad.Listen().ok());
  o.address = "127.0.0.1";
  o.port = f.server.port();
  RespServer taken(f.io, o, f.front.target);
  CHECK(!taken.Listen().ok());
  CHECK(taken.port() == 0);
}

TEST_CASE("resp server: Stop answers commands in flight, closes idle ones, then drains") {
  Fixture f(EachIoLayout(RespServerOptions{}));
  REQUIRE(f.listening);
  Client idle(f.server.port());
  Client busy(f.server.port());
  CHECK(idle.Call("PING\r\n") == "+PONG\r\n");
  f.store.SetHold(true);  // the first reservations of both keys block
  busy.Send(Cmd({"INCR", "auto_s"}) + Cmd({"INCR", "k"}) + "PING\r\n");
  REQUIRE(WaitFor([&] { return f.allocator.stats().parked_now == 2; }));

  std::atomic<bool> drained{false};
  f.server.Stop([&] { drained = true; });
  CHECK(idle.WaitClosed());
  std::this_thread::sleep_for(100ms);
  CHECK(!drained);
  CHECK(f.server.open_connections() == 1);
  Client late(f.server.port());  // no longer accepted
  CHECK(late.WaitClosed());

  f.store.SetHold(false);
  CHECK(busy.Read() == ":1\r\n");
  CHECK(busy.Read() == ":1\r\n");
  CHECK(busy.Read() == "+PONG\r\n");
  CHECK(busy.WaitClosed());
  busy.Close();  // ends the server's linger
  CHECK(WaitFor([&] { return drained.load(); }));
  CHECK(f.server.open_connections() == 0);
}

TEST_CASE("resp server: commands move seqd_requests_total{interface=\"resp\"}") {
  Fixture f;
  REQUIRE(f.listening);
  Metrics& metrics = f.front.services.metrics();
  Client c(f.server.port());
  // A pipelined run of three INCRs (one allocator call), then one more.
  c.Send(Cmd({"INCR", "k"}) + Cmd({"INCR", "k"}) + Cmd({"INCR", "k"}));
  for (int i = 1; i <= 3; ++i) CHECK(Int(c.Read()) == i);
  CHECK(Int(c.Call(Cmd({"INCR", "k"}))) == 4);
  CHECK(Int(c.Call(Cmd({"INCRBY", "k", "5"}))) == 9);
  CHECK(c.Call("PING\r\n") == "+PONG\r\n");
  CHECK(c.Call(Cmd({"INCR", "nosuch"})) == UnknownKeyReply("nosuch"));
  CHECK(c.Call(Cmd({"INCRBY", "k", "x"})).starts_with("-ERR"));
  CHECK(c.Call(Cmd({"FLUSHALL"})).starts_with("-ERR unknown command"));
  CHECK(c.Call(Cmd({"COMMAND"})) == "*0\r\n");

  const std::string text = metrics.Render();
  const auto has = [&](const std::string& series) {
    INFO(series);
    CHECK(text.find(series) != std::string::npos);
  };
  has(R"(seqd_requests_total{interface="resp",op="incr",status="ok"} 4)");
  has(R"(seqd_requests_total{interface="resp",op="incrby",status="ok"} 1)");
  has(R"(seqd_requests_total{interface="resp",op="ping",status="ok"} 1)");
  has(R"(seqd_requests_total{interface="resp",op="incr",status="unknown_key"} 1)");
  has(R"(seqd_requests_total{interface="resp",op="incrby",status="invalid_argument"} 1)");
  has(R"(seqd_requests_total{interface="resp",op="other",status="invalid_argument"} 1)");
  has(R"(seqd_requests_total{interface="resp",op="other",status="ok"} 1)");
  // One observation per allocator call or other command: 2 INCR runs (the
  // pipelined three and the single one), INCRBY, PING, the unknown key,
  // the bad count, the unknown command, COMMAND.
  has(R"(seqd_request_duration_seconds_count{interface="resp"} 8)");
}
