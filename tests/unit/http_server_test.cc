// HttpServer over real loopback sockets: a server io_context on background
// threads, plain Asio clients with deadlines.
#include "server/http/http_server.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/core/key_admin.h"
#include "server/http/api_router.h"
#include "tests/unit/net_test_support.h"

using namespace seqd;
using namespace seqd::nettest;
using namespace std::chrono_literals;

namespace {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers, lower-cased
  std::string body;
  bool Has(std::string_view lower_header_line) const {
    return head.find(lower_header_line) != std::string::npos;
  }
  // The X-Request-Id value (lower-cased); "" if none.
  std::string RequestId() const {
    const size_t at = head.find("\r\nx-request-id: ");
    if (at == std::string::npos) return "";
    const size_t from = at + 16;
    return head.substr(from, head.find("\r\n", from) - from);
  }
  // The error object's request_id; "" if none.
  std::string BodyRequestId() const {
    const std::string key = R"("request_id":")";
    const size_t at = body.find(key);
    if (at == std::string::npos) return "";
    const size_t from = at + key.size();
    return body.substr(from, body.find('"', from) - from);
  }
};

// A request id this server made: 16 hex digits, a dash, hex.
bool IsMadeId(const std::string& id) {
  if (id.size() < 18 || id[16] != '-') return false;
  return id.find_first_not_of("0123456789abcdef-") == std::string::npos;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A blocking-style HTTP client whose every read has a deadline.
class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 4096) {}

  // One response, or nullopt on close/error/timeout.
  std::optional<RawResponse> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    std::string& buf = buffer();
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore(deadline)) return std::nullopt;
    }
    RawResponse res;
    res.head = Lower(buf.substr(0, end + 2));
    if (res.head.size() < 12) return std::nullopt;
    res.status = std::stoi(res.head.substr(9, 3));
    size_t length = 0;
    if (size_t p = res.head.find("content-length:"); p != std::string::npos) {
      length = std::stoul(res.head.substr(p + 15));
    }
    while (buf.size() < end + 4 + length) {
      if (!ReadMore(deadline)) return std::nullopt;
    }
    res.body = buf.substr(end + 4, length);
    buf.erase(0, end + 4 + length);
    return res;
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout`; anything it still sends is discarded.
  bool WaitClosed(SteadyClock::duration timeout = 5s) { return WaitClosedDiscarding(timeout); }

 private:
  bool ReadMore(SteadyClock::time_point deadline) { return !ReadSome(deadline); }
};

std::string Get(std::string_view target, std::string_view extra = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n" + std::string(extra) + "\r\n";
}

// The HTTP server is built on a router over the allocator and a KeyAdmin.
struct RouterFront {
  RouterFront(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : admin(store, db, allocator),
        services(store, db, allocator, {.keys = &admin}),
        router(services, RouterOptions{"test", SteadyClock::now()}) {}
  KeyAdmin admin;
  TestServices services;
  ApiRouter router;
  ApiRouter& target = router;
};

using ServerFixture = ServerWorld<HttpServer, HttpOptions, RouterFront>;

// Runs the calling test once per connection threading, as doctest subcases:
// connections on strands over two io threads, strandless over one, and
// strandless over two io_contexts of one thread each (the App's). Returns
// `o` set for the threading of this run.
HttpOptions EachThreading(HttpOptions o) {
  SUBCASE("two io threads") {}
  SUBCASE("one io thread") { o.single_threaded = true; }
  SUBCASE("an io_context per thread (the App's)") {
    o.single_threaded = true;
    o.connections = PerThreadIo();
  }
  return o;
}

}  // namespace

TEST_CASE("http: keep-alive serves several requests on one connection") {
  ServerFixture f(EachThreading(HttpOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.server.port() != 0);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());

  Client c(f.server.port());
  REQUIRE(c.connected());
  c.Send(Get("/healthz"));
  auto r1 = c.Read();
  REQUIRE(r1);
  CHECK(r1->status == 200);
  CHECK(r1->body.find("\"status\":\"ok\"") != std::string::npos);
  CHECK(!r1->Has("connection: close"));

  c.Send(Get("/seq/k"));
  auto r2 = c.Read();
  REQUIRE(r2);
  CHECK(r2->status == 200);
  CHECK(r2->body == R"({"key":"k","id":1})");
  CHECK(r2->Has("cache-control: no-store"));
  CHECK(f.server.open_connections() == 1);

  // Pipelined requests are answered in order.
  c.Send(Get("/seq/k") + Get("/seq/k", "Connection: close\r\n"));
  auto r3 = c.Read();
  auto r4 = c.Read();
  REQUIRE(r3);
  REQUIRE(r4);
  CHECK(r3->body == R"({"key":"k","id":2})");
  CHECK(r4->body == R"({"key":"k","id":3})");
  CHECK(r4->Has("connection: close"));
  CHECK(c.WaitClosed());
  CHECK(WaitFor([&] { return f.server.open_connections() == 0; }));
}

TEST_CASE("http: malformed request gets 400 and the connection closes") {
  ServerFixture f(EachThreading(HttpOptions{}));
  REQUIRE(f.listening);
  for (const char* garbage :
       {"NOT HTTP AT ALL\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "\x01\x02\x03\r\n\r\n"}) {
    INFO(garbage);
    Client c(f.server.port());
    REQUIRE(c.connected());
    c.Send(garbage);
    auto r = c.Read();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(r->body.find("\"bad_request\"") != std::string::npos);
    CHECK(r->Has("connection: close"));
    CHECK(IsMadeId(r->RequestId()));
    CHECK(r->BodyRequestId() == r->RequestId());
    CHECK(c.WaitClosed());
  }
  // The server is still fine.
  Client c(f.server.port());
  c.Send(Get("/healthz"));
  auto r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("http: oversized body gets 413 and close") {
  HttpOptions o;
  o.max_body_bytes = 1024;
  ServerFixture f(o);
  REQUIRE(f.listening);
  Client c(f.server.port());
  const std::string body(5000, 'x');
  c.Send(
      "POST /admin/keys HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "X-Request-Id: big-1\r\nContent-Length: 5000\r\n\r\n" +
      body);
  auto r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 413);
  // One code for 413, whoever answers it: the ErrorCode's (kTooLarge).
  CHECK(r->body.find("\"too_large\"") != std::string::npos);
  CHECK(r->RequestId() == "big-1");  // the header was read: the client's id
  CHECK(r->BodyRequestId() == "big-1");
  CHECK(c.WaitClosed());

  // A body within the limit is fine.
  Client ok(f.server.port());
  std::string json = R"({"key":"small","step":5})";
  ok.Send(
      "POST /admin/keys HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(json.size()) + "\r\n\r\n" + json);
  r = ok.Read();
  REQUIRE(r);
  CHECK(r->status == 201);
}

TEST_CASE("http: the route decides before the content type; HTTP/1.0 needs no Host") {
  ServerFixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  // A method the route does not take is 405 and an unknown path 404, with
  // or without a body and whatever its type.
  c.Send("POST /seq/order HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
  auto r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 405);
  CHECK(r->Has("allow: get"));
  c.Send(
      "PUT /healthz HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
      "Content-Length: 2\r\n\r\nhi");
  r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 405);
  c.Send(
      "POST /nope HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
      "Content-Length: 2\r\n\r\nhi");
  r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 404);
  // A form post to a route that takes POST: 415, counted as such.
  const std::string form = R"({"key":"csrf","step":5})";
  c.Send(
      "POST /admin/keys HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
      "Content-Length: " +
      std::to_string(form.size()) + "\r\n\r\n" + form);
  r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 415);
  CHECK(r->body.find("\"unsupported_media_type\"") != std::string::npos);
  CHECK(f.front.services.metrics().Render().find(R"(op="admin",status="unsupported_media_type")") !=
        std::string::npos);
  CHECK(f.mem.GetKey("csrf").error().code == ErrorCode::kUnknownKey);

  // HTTP/1.0 without Host (HAProxy's `option httpchk`) is served, and its
  // connection closes after the answer; HTTP/1.1 without Host is 400.
  for (const char* check : {"GET /healthz HTTP/1.0\r\n\r\n", "OPTIONS / HTTP/1.0\r\n\r\n"}) {
    INFO(check);
    Client old(f.server.port());
    old.Send(check);
    r = old.Read();
    REQUIRE(r);
    CHECK(r->head.starts_with("http/1.0 2"));
    CHECK(old.WaitClosed());
  }
  Client no_host(f.server.port());
  no_host.Send("GET /healthz HTTP/1.1\r\n\r\n");
  r = no_host.Read();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(r->body.find("Host") != std::string::npos);
}

TEST_CASE("http: Expect: 100-continue gets its 100 before the body is sent") {
  ServerFixture f;
  REQUIRE(f.listening);
  Client c(f.server.port());
  const std::string json = R"({"key":"waits","step":5})";
  c.Send(
      "POST /admin/keys HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Expect: 100-Continue\r\nContent-Length: " +
      std::to_string(json.size()) + "\r\n\r\n");
  auto r = c.Read();  // the body is not sent yet: only the interim answer can come
  REQUIRE(r);
  CHECK(r->status == 100);
  c.Send(json);
  r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 201);
  // Without a body to wait for, no 100: the answer comes at once.
  c.Send(Get("/healthz", "Expect: 100-continue\r\n"));
  r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("http: oversized header gets 431 and close") {
  ServerFixture f(HttpOptions{});
  REQUIRE(f.listening);
  Client c(f.server.port());
  c.Send(Get("/healthz", "X-Filler: " + std::string(10000, 'a') + "\r\n"));
  auto r = c.Read();
  REQUIRE(r);
  CHECK(r->status == 431);
  CHECK(IsMadeId(r->RequestId()));
  CHECK(r->BodyRequestId() == r->RequestId());
  CHECK(c.WaitClosed());
}

TEST_CASE("http: idle and trickling clients are dropped at the idle timeout") {
  HttpOptions o;
  o.idle_timeout = 1s;
  ServerFixture f(EachThreading(o));
  REQUIRE(f.listening);

  CheckSilentConnectionClosedAtOneSecond<Client>(f.server.port());

  // Idle after a response on a keep-alive connection.
  Client kept(f.server.port());
  kept.Send(Get("/healthz"));
  REQUIRE(kept.Read());
  auto start = SteadyClock::now();
  CHECK(kept.WaitClosed(4s));
  CHECK(SteadyClock::now() - start >= 900ms);

  // Trickling a header does not extend the deadline.
  start = SteadyClock::now();
  Client slow(f.server.port());
  slow.Send("GET /healthz HTTP/1.1\r\n");
  bool closed = false;
  for (int i = 0; i < 10 && !closed; ++i) {
    slow.Send("X-A: b\r\n");
    closed = slow.WaitClosed(300ms);
  }
  CHECK(closed);
  CHECK(SteadyClock::now() - start < 2500ms);
  CHECK(WaitFor([&] { return f.server.open_connections() == 0; }));
}

TEST_CASE("http: Stop() closes idle connections and lets in-flight requests finish") {
  ServerFixture f(EachThreading(HttpOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  const uint16_t port = f.server.port();

  Client idle(port);
  idle.Send(Get("/healthz"));
  REQUIRE(idle.Read());

  f.store.SetHold(true);
  Client busy(port);
  busy.Send(Get("/seq/k"));
  REQUIRE(WaitFor([&] { return f.store.reserve_calls() >= 1; }));

  std::future<void> drained_future = StopWithOneInFlight(f, idle);

  f.store.SetHold(false);
  auto r = busy.Read();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == R"({"key":"k","id":1})");
  CHECK(r->Has("connection: close"));
  CheckStopFinishes(f, busy, drained_future);
}

TEST_CASE("http: connections beyond max_connections get 503") {
  HttpOptions o;
  o.max_connections = 1;
  ServerFixture f(o);
  REQUIRE(f.listening);
  Client first(f.server.port());
  first.Send(Get("/healthz"));
  REQUIRE(first.Read());
  REQUIRE(f.server.open_connections() == 1);

  Client second(f.server.port());
  second.Send(Get("/healthz"));
  auto r = second.Read();
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(IsMadeId(r->RequestId()));
  CHECK(second.WaitClosed());

  first.Send(Get("/healthz"));
  r = first.Read();
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("http: Listen() reports a port in use without throwing") {
  ServerFixture f(HttpOptions{});
  REQUIRE(f.listening);
  HttpOptions o;
  o.port = f.server.port();
  HttpServer other(f.io, o, f.front.router);
  Status s = other.Listen();
  REQUIRE(!s.ok());
  CHECK(s.error().code == ErrorCode::kInvalidArgument);
  CHECK(s.error().message.find(std::to_string(o.port)) != std::string::npos);

  o.address = "not an address";
  HttpServer bad(f.io, o, f.front.router);
  s = bad.Listen();
  REQUIRE(!s.ok());
  CHECK(s.error().message.find("not an address") != std::string::npos);
}

TEST_CASE("http: concurrent clients get unique IDs") {
  ServerFixture f(EachThreading(HttpOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 7, "").ok());  // small step: many reservations
  constexpr int kClients = 6, kRequests = 150;
  std::vector<std::vector<int64_t>> ids(kClients);
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      Client c(f.server.port());
      for (int n = 0; n < kRequests; ++n) {
        c.Send(Get("/seq/k", "Accept: text/plain\r\n"));
        auto r = c.Read();
        if (!r || r->status != 200) {
          ++failures;
          return;
        }
        ids[i].push_back(std::stoll(r->body));
      }
    });
  }
  for (auto& t : clients) t.join();
  CHECK(failures == 0);
  std::vector<int64_t> all;
  for (auto& v : ids) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  CHECK(all.size() == size_t{kClients * kRequests});
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

TEST_CASE("http: every answer carries X-Request-Id: the client's if acceptable, else a new one") {
  ServerFixture f(EachThreading(HttpOptions{}));
  REQUIRE(f.listening);
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  Client c(f.server.port());
  auto ask = [&](const std::string& request) {
    c.Send(request);
    auto r = c.Read();
    REQUIRE(r);
    return *r;
  };
  // The ID routes' fast path (headers formatted by hand).
  RawResponse a = ask(Get("/seq/k"));
  CHECK(a.status == 200);
  CHECK(IsMadeId(a.RequestId()));
  RawResponse b = ask(Get("/seq/k", "Accept: text/plain\r\n"));
  CHECK(IsMadeId(b.RequestId()));
  CHECK(a.RequestId() != b.RequestId());
  CHECK(a.RequestId().substr(0, 16) == b.RequestId().substr(0, 16));  // one process, one prefix
  CHECK(ask(Get("/seq/k", "X-Request-Id: client.id:1-a_b\r\n")).RequestId() == "client.id:1-a_b");
  CHECK(ask(Get("/seq/k", "x-request-id: lower-case-name\r\n")).RequestId() == "lower-case-name");
  CHECK(IsMadeId(ask("HEAD /seq/k HTTP/1.1\r\nHost: t\r\n\r\n").RequestId()));
  // Not acceptable: replaced by one of ours, never echoed.
  for (const std::string& bad : {std::string("has space"), std::string("quo\"te"),
                                 std::string(129, 'a'), std::string("semi;colon")}) {
    INFO(bad);
    RawResponse r = ask(Get("/seq/k", "X-Request-Id: " + bad + "\r\n"));
    CHECK(r.status == 200);
    CHECK(IsMadeId(r.RequestId()));
  }
  // Other answers, errors with the id in the body too.
  CHECK(IsMadeId(ask(Get("/healthz")).RequestId()));
  RawResponse nf = ask(Get("/nope", "X-Request-Id: err-2\r\n"));
  CHECK(nf.status == 404);
  CHECK(nf.RequestId() == "err-2");
  CHECK(nf.BodyRequestId() == "err-2");
  RawResponse unknown = ask(Get("/seq/nokey"));
  CHECK(unknown.status == 404);
  CHECK(IsMadeId(unknown.RequestId()));
  CHECK(unknown.BodyRequestId() == unknown.RequestId());
  // HTTP/1.0: the general path (a Connection field), not the fast one.
  Client old(f.server.port());
  old.Send("GET /seq/k HTTP/1.0\r\nHost: t\r\nX-Request-Id: old-1\r\n\r\n");
  auto r = old.Read();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->RequestId() == "old-1");
}
