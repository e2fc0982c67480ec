// What the tests of ApiRouter without sockets share: the allocator and key
// admin under a router, a router over any store, a store that always fails,
// ways to hand the router a request and get its answer, and readers of an
// answer.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/test_services.h"
#include "tests/unit/test_stores.h"

namespace seqd {

// An allocator (no key rules, default options) and a key admin over
// `segments`, in memory; database tasks run when the test runs `runner`,
// timers fire when it moves `clock`.
struct AdminOverMemory {
  MemoryStore segments;
  ManualRunner runner;
  ManualClock clock;
  SegmentAllocator allocator{segments, runner, clock, KeyRules(), AllocatorOptions{}};
  KeyAdmin admin{segments, runner, allocator};
};

// The internal detail in BrokenStore's errors; no answer may show it.
inline constexpr char kSecret[] = "password=hunter2 host=db.internal:3306";

// A store failing every call with an internal error whose message must
// never leak.
inline FailingSegmentStore BrokenStore() {
  return FailingSegmentStore(MakeError(ErrorCode::kInternal, kSecret));
}

// An ApiRouter (version "9.9.9", started `uptime` ago) over real services,
// an allocator under `rules` and a key admin, all on `store`; database tasks
// run when Call runs `runner`, parked requests wake when it moves `clock`.
//
// Ownership: `store` must outlive the fixture. Thread safety: the test's
// thread only.
struct RouterFixture {
  using Headers = std::vector<std::pair<boost::beast::http::field, std::string>>;

  // `placement`: store groups' view (null: none); it must outlive the fixture.
  RouterFixture(SegmentStore& store, std::chrono::seconds uptime, KeyRules rules = KeyRules(),
                PlacementApi* placement = nullptr)
      : allocator(store, runner, clock, std::move(rules), AllocatorOptions{}),
        admin(store, runner, allocator),
        services(store, runner, allocator, {.keys = &admin, .placement = placement}),
        router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now() - uptime}) {}

  ~RouterFixture() { runner.RunAll(); }

  // Hands the router a request and returns its answer, running database
  // work and letting time pass (500 ms at a time) while it is parked.
  // REQUIREs an answer; CHECKs that it came exactly once. A body is sent as
  // JSON unless `headers` say otherwise (the CSRF rule).
  ApiRouter::Response Call(boost::beast::http::verb method, std::string target,
                           std::string body = "", Headers headers = {}, unsigned version = 11) {
    namespace http = boost::beast::http;
    ApiRouter::Request req{method, target, version};
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (auto& [field, value] : headers) req.set(field, value);
    req.body() = std::move(body);
    req.prepare_payload();
    std::optional<ApiRouter::Response> out;
    int calls = 0;
    router.Handle(std::move(req), [&](ApiRouter::Response res) {
      ++calls;
      out = std::move(res);
    });
    for (int i = 0; i < 10 && !out; ++i) {
      runner.RunAll();
      if (!out) clock.Advance(std::chrono::milliseconds(500));
    }
    runner.RunAll();
    REQUIRE(out.has_value());
    CHECK(calls == 1);
    return std::move(*out);
  }

  ApiRouter::Response Get(std::string target, Headers headers = {}) {
    return Call(boost::beast::http::verb::get, std::move(target), "", std::move(headers));
  }

  ManualRunner runner;
  ManualClock clock;
  SegmentAllocator allocator;
  KeyAdmin admin;
  TestServices services;
  ApiRouter router;
};

// Hands `router` a GET of `target`, runs `db` and returns the answer;
// REQUIREs that one came.
inline ApiRouter::Response GetAfterRunning(ApiRouter& router, ManualRunner& db,
                                           std::string target) {
  ApiRouter::Request req{boost::beast::http::verb::get, target, 11};
  std::optional<ApiRouter::Response> out;
  router.Handle(std::move(req), [&](ApiRouter::Response res) { out = std::move(res); });
  db.RunAll();
  REQUIRE(out);
  return std::move(*out);
}

// A request as a JSON client sends it: Host localhost, Content-Type
// application/json, `body`.
inline ApiRouter::Request JsonRequest(boost::beast::http::verb method, std::string target,
                                      std::string body) {
  namespace http = boost::beast::http;
  ApiRouter::Request req{method, target, 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// Hands `req` to `router` and returns the answer, which may come on another
// thread: calls `between_waits()` before each wait of up to 20 ms, for at
// most `rounds` waits; REQUIREs that the answer came.
template <typename BetweenWaits>
ApiRouter::Response AwaitAnswer(ApiRouter& router, ApiRouter::Request req, int rounds,
                                BetweenWaits between_waits) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<ApiRouter::Response> out;
  router.Handle(std::move(req), [&](ApiRouter::Response res) {
    std::lock_guard lock(mu);
    out = std::move(res);
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  for (int i = 0; i < rounds && !out; ++i) {
    lock.unlock();
    between_waits();
    lock.lock();
    cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return out.has_value(); });
  }
  REQUIRE(out.has_value());
  return std::move(*out);
}

// The value of `res`'s header `f`; "" if it has none.
inline std::string Header(const ApiRouter::Response& res, boost::beast::http::field f) {
  auto it = res.find(f);
  return it == res.end() ? std::string() : std::string(it->value());
}

// `res`'s body as JSON; REQUIREs that it parses.
inline nlohmann::json Body(const ApiRouter::Response& res) {
  nlohmann::json j = nlohmann::json::parse(res.body(), nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), res.body());
  return j;
}

}  // namespace seqd
