// The HTTP request path without sockets: raw bytes through Beast's request
// parser, with the limits HttpServer sets (server/http/http_server.cc, the
// defaults of server/config/config.h as server/app_options.cc passes them),
// then ApiRouter over memory stores: a real allocator, key admin, message
// service and snowflake generator. Database tasks and time are driven by
// the harness; the message service runs its own threads.
//
// Requests that carry an Authorization header go to a router with tokens
// (three tokens: admin, a narrow one, the cluster scope); the others to an
// open one. Each request is answered before the next is parsed, as the
// server's session does; a parse error or a response that closes the
// connection ends the input.
//
// Beast is slow to compile: it is included by this translation unit only.
#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "server/auth/authenticator.h"
#include "server/base/log.h"
#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "storage/memory/memory_store.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_tokens.h"
#include "tests/fuzz/fuzz_worlds.h"
#include "tests/unit/test_services.h"

namespace seqd::fuzz {

namespace {

namespace http = boost::beast::http;
using Request = ApiRouter::Request;
using Response = ApiRouter::Response;

// HttpServer's limits with the configuration's defaults
// (Config::http_max_header_bytes, Config::http_max_body_bytes).
constexpr size_t kMaxHeaderBytes = 8192;
constexpr size_t kMaxBodyBytes = 262144;
// Requests served by one world before it is rebuilt: the memory stores only
// grow (keys created, messages sent).
constexpr int kRequestsPerWorld = 20000;

// Everything one router needs, over memory stores.
struct HttpWorld {
  HttpWorld()
      : allocator(store, runner, clock, KeyRules({{"sg_", 100}}), ShortWaitAllocatorOptions()),
        admin(store, runner, allocator),
        snowflake(wall, clock, ShortWaitSnowflakeOptions()),
        services(store, runner, allocator, {.keys = &admin, .snowflake = &snowflake}),
        open(services, RouterOptions{"fuzz", std::chrono::steady_clock::now()}),
        authed(WithAuth(services, auth.get()),
               RouterOptions{"fuzz", std::chrono::steady_clock::now()}) {
    snowflake.Grant(5, 0, wall.NowMs() + 24 * 3'600'000, clock.Now() + std::chrono::hours(24));
    FUZZ_CHECK(store.CreateKey("fuzz", 1000, "").ok());
    FUZZ_CHECK(store.CreateKey("f", 3, "").ok());  // tiny step: batches span segments
  }
  ~HttpWorld() {
    allocator.Shutdown();
    snowflake.Shutdown();
    runner.RunAll();
  }

  static Services WithAuth(const TestServices& base, const Authenticator* auth) {
    Services s = ServicesWithAuth(base, auth);
    s.metrics_auth = true;
    return s;
  }

  // Runs database tasks and lets time pass until `done()`; the message
  // service answers from its own threads, so real time passes too.
  template <typename Done>
  void DriveUntil(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int idle = 0; !done();) {
      FUZZ_CHECK(std::chrono::steady_clock::now() < deadline);  // a request never answered
      if (runner.RunAll() > 0) continue;
      if (++idle % 64 == 0) {  // nothing to run here: let the manual clocks move
        clock.Advance(std::chrono::milliseconds(50));
        wall.Advance(50);
      } else {
        std::this_thread::yield();
      }
    }
    runner.RunAll();
  }

  std::unique_ptr<Authenticator> auth = LoadFuzzTokens();
  ManualRunner runner;
  ManualClock clock;
  ManualWallClock wall{1'700'000'000'000};
  MemoryStore store;
  SegmentAllocator allocator;
  KeyAdmin admin;
  SnowflakeGenerator snowflake;
  TestServices services;  // the message service over a memory store, metrics
  ApiRouter open;
  ApiRouter authed;
  int served = 0;
};

HttpWorld& World() {
  static std::unique_ptr<HttpWorld> world;
  if (!world || world->served >= kRequestsPerWorld) {
    SetLogLevel(LogLevel::kError);
    world.reset();
    world = std::make_unique<HttpWorld>();
  }
  return *world;
}

// What a client reading `res` off the wire would see must be `res`: the
// serialized bytes parse back as one whole response with the same status,
// headers that frame it and the same body.
void CheckWellFormed(const Request& req, const Response& res) {
  std::ostringstream wire;
  wire << res;
  const std::string bytes = wire.str();
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(64 << 20);
  boost::system::error_code ec;
  const size_t used = parser.put(boost::asio::buffer(bytes), ec);
  FUZZ_CHECK(!ec);
  FUZZ_CHECK(parser.is_done());
  FUZZ_CHECK(used == bytes.size());
  const auto& back = parser.get();
  FUZZ_CHECK(back.result_int() == res.result_int());
  FUZZ_CHECK(back.body() == res.body());
  FUZZ_CHECK(back.version() == req.version());
  FUZZ_CHECK(res.result_int() >= 200 && res.result_int() <= 599);
  // Content-Length frames the body (prepare_payload ran), never chunked; a
  // 204 (OPTIONS) has neither a body nor a Content-Length.
  if (res.result() == http::status::no_content) {
    FUZZ_CHECK(!back.has_content_length() && res.body().empty());
    FUZZ_CHECK(req.method() == http::verb::options);
    FUZZ_CHECK(res.find(http::field::allow) != res.end());
    return;
  }
  FUZZ_CHECK(back.has_content_length());
  FUZZ_CHECK(!back.chunked());
  // A request that asked to close gets a response that closes.
  if (!req.keep_alive()) FUZZ_CHECK(!res.keep_alive());

  // The memory stores never fail: no 500. (503 may come from a parked
  // request's deadline or the message service's queue.)
  FUZZ_CHECK(res.result_int() != 500);
  const auto type = res.find(http::field::content_type);
  FUZZ_CHECK(type != res.end());
  // A HEAD on a route that hands out IDs answers with no body.
  const bool empty_head = req.method() == http::verb::head && res.body().empty();
  if (type->value() == "application/json" && !empty_head) {
    const auto json = nlohmann::json::parse(res.body(), nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(!json.is_discarded());
    if (res.result_int() >= 400) {
      FUZZ_CHECK(json.contains("error") && json["error"].is_object());
      FUZZ_CHECK(json["error"].contains("code") && json["error"]["code"].is_string());
      FUZZ_CHECK(json["error"].contains("message") && json["error"]["message"].is_string());
    }
  }
  if (res.result() == http::status::unauthorized) {
    FUZZ_CHECK(res.find(http::field::www_authenticate) != res.end());
  }
  if (res.result() == http::status::method_not_allowed) {
    FUZZ_CHECK(res.find(http::field::allow) != res.end());
  }
}

// Hands `req` to `router` and waits for its answer: exactly one, checked.
// Returns whether the connection stays open.
bool Serve(HttpWorld& world, ApiRouter& router, Request req) {
  struct Answer {
    std::atomic<int> calls{0};
    std::optional<Response> response;
    std::mutex mu;
  };
  auto answer = std::make_shared<Answer>();
  const Request copy = req;
  ++world.served;
  router.Handle(std::move(req), "192.0.2.1:4242", [answer](Response res) {
    std::lock_guard lock(answer->mu);
    FUZZ_CHECK(answer->calls.fetch_add(1) == 0);  // answered exactly once
    answer->response.emplace(std::move(res));
  });
  world.DriveUntil([&] { return answer->calls.load() > 0; });
  std::lock_guard lock(answer->mu);
  CheckWellFormed(copy, *answer->response);
  return answer->response->keep_alive();
}

// The router a request goes to: with tokens if it presents any.
ApiRouter& RouterFor(HttpWorld& world, const Request& req) {
  return req.find(http::field::authorization) != req.end() ? world.authed : world.open;
}

// The body-parsing routes the JSON target reaches (first input byte, low
// nibble), and who asks (high nibble, see Secret()).
struct JsonRoute {
  http::verb method;
  std::string_view target;
};
constexpr std::array<JsonRoute, 12> kJsonRoutes = {{
    {http::verb::post, "/admin/keys"},
    {http::verb::put, "/admin/keys/fuzz/step"},
    {http::verb::put, "/admin/keys/sg_auto/step"},
    {http::verb::post, "/conversations/c1/messages"},
    {http::verb::put, "/conversations/c1/min_seq"},
    {http::verb::put, "/conversations/c2/min_seq"},
    {http::verb::put, "/conversations/c1/members/u1"},
    {http::verb::put, "/conversations/c1/members/u1/read_seq"},
    {http::verb::post, "/users/u1/sync"},
    {http::verb::post, "/conversations/max_seqs"},
    {http::verb::post, "/conversations/c1/messages/1/recall"},
    {http::verb::post, "/conversations/c%2F1/messages"},
}};

// No token (open router), admin, narrow, cluster, or none at the router
// with tokens.
std::optional<std::string_view> Secret(uint8_t who) {
  switch (who % 5) {
    case 1:
      return kAdminSecret;
    case 2:
      return kNarrowSecret;
    case 3:
      return kClusterSecret;
    case 4:
      return "not-a-token";
    default:
      return std::nullopt;
  }
}

}  // namespace

void HttpRequest(const uint8_t* data, size_t size) {
  HttpWorld& world = World();
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (int requests = 0; !rest.empty() && requests < 16; ++requests) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(kMaxBodyBytes);
    parser.eager(true);
    boost::system::error_code ec;
    while (!parser.is_done() && !rest.empty()) {
      const size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
      FUZZ_CHECK(used <= rest.size());
      rest.remove_prefix(used);
      if (ec == http::error::need_more) {
        if (used == 0) break;  // the input ends inside a request: dropped
        ec = {};
        continue;
      }
      if (ec) return;  // HttpServer answers 400, 413 or 431 and closes
    }
    if (!parser.is_done()) return;
    Request req = parser.release();
    ApiRouter& router = RouterFor(world, req);
    if (!Serve(world, router, std::move(req))) return;
  }
}

void HttpJson(const uint8_t* data, size_t size) {
  if (size == 0) return;
  HttpWorld& world = World();
  const JsonRoute& route = kJsonRoutes[data[0] % 16 % kJsonRoutes.size()];
  const std::optional<std::string_view> secret = Secret(data[0] >> 4);
  Request req{route.method, std::string(route.target), 11};
  req.set(http::field::host, "fuzz");
  req.set(http::field::content_type, "application/json");
  if (secret) req.set(http::field::authorization, "Bearer " + std::string(*secret));
  req.body().assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  req.prepare_payload();
  ApiRouter& router = (data[0] >> 4) % 5 == 0 ? world.open : world.authed;
  Serve(world, router, std::move(req));
}

}  // namespace seqd::fuzz
