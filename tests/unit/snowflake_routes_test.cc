// The snowflake HTTP endpoints through ApiRouter (no sockets), over a real
// SnowflakeGenerator on manual clocks.
#include "server/http/routes/snowflake_routes.h"

#include <doctest/doctest.h>

#include <boost/beast/http/field.hpp>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/metrics/metrics.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
namespace http = boost::beast::http;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1795360448589;  // 2026-11-22T15:14:08.589Z
constexpr int kWorker = 5;
constexpr int64_t kMaxCount = 100;
constexpr int64_t kLeafEpochMs = SnowflakeLayout::kLeafEpochMs;

int64_t LeafId(int64_t time_ms, int64_t worker, int64_t sequence) {
  return (time_ms - kLeafEpochMs) << 22 | worker << 12 | sequence;
}

SnowflakeOptions DefaultOptions() {
  SnowflakeOptions o;  // Leaf's layout
  o.max_count = kMaxCount;
  return o;
}

SnowflakeOptions OffOptions() {
  SnowflakeOptions o = DefaultOptions();
  o.enabled = false;
  return o;
}

struct Fixture : AdminOverMemory {
  ManualWallClock wall{kT0};
  Metrics metrics{"test"};
  SnowflakeGenerator generator;
  TestServices services;
  ApiRouter router;

  explicit Fixture(SnowflakeOptions o = DefaultOptions(), bool admin_only = false)
      : generator(wall, clock, o),
        services(segments, runner, allocator,
                 {.keys = &admin, .snowflake = &generator, .metrics = &metrics}),
        router(services, RouterOptions{"t", std::chrono::steady_clock::now(), admin_only}) {}

  void Grant() { generator.Grant(kWorker, 0, kT0 + 1'000'000'000, clock.Now() + 1h); }

  // Starts a request; the future is ready once the router answered.
  std::future<ApiRouter::Response> Start(http::verb method, std::string target,
                                         std::string accept = "") {
    ApiRouter::Request req{method, target, 11};
    if (!accept.empty()) req.set(http::field::accept, accept);
    auto p = std::make_shared<std::promise<ApiRouter::Response>>();
    auto f = p->get_future();
    router.Handle(std::move(req), [p](ApiRouter::Response res) { p->set_value(std::move(res)); });
    return f;
  }
  // A request answered at once (nothing here waits for a timer).
  ApiRouter::Response Get(std::string target, std::string accept = "",
                          http::verb method = http::verb::get) {
    auto f = Start(method, std::move(target), std::move(accept));
    REQUIRE(f.wait_for(0s) == std::future_status::ready);
    return f.get();
  }
};

json Json(const ApiRouter::Response& res) { return json::parse(res.body()); }
std::string Type(const ApiRouter::Response& res) {
  return std::string(res[http::field::content_type]);
}
std::string ErrCode(const ApiRouter::Response& res) {
  return Json(res)["error"]["code"].get<std::string>();
}
std::string ErrorMessage(const ApiRouter::Response& res) {
  return Json(res)["error"]["message"].get<std::string>();
}

std::vector<int64_t> Lines(const std::string& body) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start < body.size()) {
    const size_t nl = body.find('\n', start);
    REQUIRE(nl != std::string::npos);  // every line ends with a newline
    out.push_back(std::stoll(body.substr(start, nl - start)));
    start = nl + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("HTTP snowflake: GET /snowflake gives one ID as a string, as id and in ids") {
  Fixture f;
  f.Grant();
  auto r = f.Get("/snowflake");
  REQUIRE(r.result() == http::status::ok);
  CHECK(Type(r) == "application/json");
  CHECK(r[http::field::cache_control] == "no-store");
  const json j = Json(r);
  REQUIRE(j["id"].is_string());
  REQUIRE(j["ids"].is_array());
  REQUIRE(j["ids"].size() == 1);
  CHECK(j["ids"][0] == j["id"]);
  CHECK(r.body().rfind(R"({"id":")", 0) == 0);
  const int64_t id = std::stoll(j["id"].get<std::string>());
  CHECK(id == LeafId(kT0, kWorker, 0));

  // count=1 is the same shape.
  const json one = Json(f.Get("/snowflake?count=1"));
  CHECK(one["id"] == one["ids"][0]);
  CHECK(std::stoll(one["id"].get<std::string>()) == LeafId(kT0, kWorker, 1));
}

TEST_CASE("HTTP snowflake: ?count=N gives N ascending IDs as strings, without id") {
  Fixture f;
  f.Grant();
  auto r = f.Get("/snowflake?count=5");
  REQUIRE(r.result() == http::status::ok);
  const json j = Json(r);
  CHECK_FALSE(j.contains("id"));
  REQUIRE(j["ids"].size() == 5);
  int64_t last = -1;
  for (const json& v : j["ids"]) {
    REQUIRE(v.is_string());
    const int64_t id = std::stoll(v.get<std::string>());
    CHECK(id > last);
    last = id;
  }
  CHECK(last == LeafId(kT0, kWorker, 4));
  CHECK(Json(f.Get("/snowflake?count=" + std::to_string(kMaxCount)))["ids"].size() == kMaxCount);
  CHECK(Json(f.Get("/snowflake?count=%33"))["ids"].size() == 3);  // percent-encoded "3"
}

TEST_CASE("HTTP snowflake: Accept text/plain gives one ID per line") {
  Fixture f;
  f.Grant();
  auto one = f.Get("/snowflake", "text/plain");
  REQUIRE(one.result() == http::status::ok);
  CHECK(Type(one) == "text/plain");
  CHECK(Lines(one.body()) == std::vector<int64_t>{LeafId(kT0, kWorker, 0)});
  auto three = f.Get("/snowflake?count=3", "text/plain; q=0.9");
  CHECK(Lines(three.body()) == std::vector<int64_t>{LeafId(kT0, kWorker, 1),
                                                    LeafId(kT0, kWorker, 2),
                                                    LeafId(kT0, kWorker, 3)});
  // JSON wins when both are acceptable, as for /seq.
  CHECK(Type(f.Get("/snowflake", "text/plain, application/json")) == "application/json");
}

TEST_CASE("HTTP snowflake: a bad count is 400 invalid_argument, worded like /seq's") {
  Fixture f;
  f.Grant();
  const std::string want = "count must be an integer in [1, " + std::to_string(kMaxCount) + "]";
  for (std::string count :
       {"0", "101", "-1", "abc", "", "1.5", "+3", "%zz", "99999999999999999999"}) {
    INFO("count=" << count);
    auto r = f.Get("/snowflake?count=" + count);
    CHECK(r.result() == http::status::bad_request);
    CHECK(ErrCode(r) == "invalid_argument");
    CHECK(ErrorMessage(r) == want);
    CHECK(Type(r) == "application/json");
  }
  // /seq says it the same way (its own max).
  auto seq = f.Get("/seq/order?count=0");
  CHECK(seq.result() == http::status::bad_request);
  CHECK(ErrorMessage(seq).rfind("count must be an integer in [1, ", 0) == 0);
}

TEST_CASE("HTTP snowflake: no worker id leased is 503 not_serving on both issuing routes") {
  Fixture f;
  for (std::string target : {"/snowflake", "/snowflake?count=2", "/api/snowflake/get/order"}) {
    INFO(target);
    auto r = f.Get(target);
    CHECK(r.result() == http::status::service_unavailable);
    CHECK(Type(r) == "application/json");
    CHECK(ErrCode(r) == "not_serving");
    CHECK_FALSE(ErrorMessage(r).empty());
  }
  f.Grant();
  CHECK(f.Get("/snowflake").result() == http::status::ok);
  f.generator.Revoke("worker id lease lost");
  auto revoked = f.Get("/snowflake");
  CHECK(revoked.result() == http::status::service_unavailable);
  CHECK(ErrorMessage(revoked).find("worker id lease lost") != std::string::npos);
  // Decoding needs no lease.
  CHECK(f.Get("/snowflake/decode/1").result() == http::status::ok);
  CHECK(f.Get("/decodeSnowflakeId?snowflakeId=1").result() == http::status::ok);
}

TEST_CASE("HTTP snowflake: a request waiting for the next millisecond is answered from a timer") {
  SnowflakeOptions o = DefaultOptions();
  o.layout.sequence_bits = 2;  // 4 IDs per millisecond
  Fixture f(o);
  f.Grant();
  REQUIRE(f.Get("/snowflake?count=4").result() == http::status::ok);
  auto pending = f.Start(http::verb::get, "/snowflake?count=2", "text/plain");
  CHECK(pending.wait_for(0s) == std::future_status::timeout);
  f.wall.Advance(1);
  std::thread timer([&] { f.clock.Advance(1ms); });  // the timer fires on another thread
  timer.join();
  REQUIRE(pending.wait_for(5s) == std::future_status::ready);
  auto r = pending.get();
  REQUIRE(r.result() == http::status::ok);
  const std::vector<int64_t> ids = Lines(r.body());
  REQUIRE(ids.size() == 2);
  const SnowflakeLayout& layout = f.generator.layout();
  CHECK(ids[0] == layout.Compose(kT0 + 1, kWorker, 0));
  CHECK(ids[1] == layout.Compose(kT0 + 1, kWorker, 1));
}

TEST_CASE("HTTP snowflake: GET /snowflake/decode/{id} gives the fields and the UTC time") {
  Fixture f;
  const int64_t id = LeafId(kT0, kWorker, 1);
  REQUIRE(id == 2124521821414903809);  // docs/protocol.md's vector
  auto r = f.Get("/snowflake/decode/" + std::to_string(id));
  REQUIRE(r.result() == http::status::ok);
  CHECK(r.body() == R"({"id":"2124521821414903809","time_ms":1795360448589,)"
                    R"("time":"2026-11-22T15:14:08.589Z","worker":5,"sequence":1})");

  struct Case {
    int64_t time_ms;
    const char* iso;
  };
  for (const Case& c : {Case{kLeafEpochMs, "2010-11-04T01:42:54.657Z"},
                        Case{1709251199999, "2024-02-29T23:59:59.999Z"},  // a leap day
                        Case{1709251200000, "2024-03-01T00:00:00.000Z"},
                        Case{1767225599999, "2025-12-31T23:59:59.999Z"},
                        Case{1767225600000, "2026-01-01T00:00:00.000Z"},
                        Case{3476390400000, "2080-02-29T00:00:00.000Z"},
                        Case{kLeafEpochMs + (int64_t{1} << 41) - 1, "2080-07-10T17:30:30.208Z"}}) {
    INFO(c.iso);
    const json j =
        Json(f.Get("/snowflake/decode/" + std::to_string(LeafId(c.time_ms, 1023, 4095))));
    CHECK(j["time"] == c.iso);
    CHECK(j["time_ms"] == c.time_ms);
    CHECK(j["worker"] == 1023);
    CHECK(j["sequence"] == 4095);
  }
  CHECK(Json(f.Get("/snowflake/decode/0"))["time"] == "2010-11-04T01:42:54.657Z");
  CHECK(Json(f.Get("/snowflake/decode/007"))["id"] == "7");  // normalized
}

TEST_CASE("HTTP snowflake: a bad id to decode is 400 invalid_argument") {
  SnowflakeOptions o = DefaultOptions();
  o.layout.time_bits = 40;  // 62 bits: 2^62 is out of range
  Fixture f(o);
  const std::string max = std::to_string(f.generator.layout().max_id());
  for (std::string id :
       std::vector<std::string>{"abc", "-1", "", "1e3", "0x10", "%zz", "9223372036854775808",
                                std::to_string(f.generator.layout().max_id() + 1)}) {
    INFO("id=" << id);
    for (std::string target : {"/snowflake/decode/" + id, "/decodeSnowflakeId?snowflakeId=" + id}) {
      auto r = f.Get(target);
      CHECK(r.result() == http::status::bad_request);
      CHECK(ErrCode(r) == "invalid_argument");
      CHECK(ErrorMessage(r).find("[0, " + max + "]") != std::string::npos);
    }
  }
  CHECK(f.Get("/snowflake/decode/" + max).result() == http::status::ok);
  auto missing = f.Get("/decodeSnowflakeId");
  CHECK(missing.result() == http::status::bad_request);
  CHECK(ErrorMessage(missing) == "query parameter snowflakeId is required");
  CHECK(f.Get("/decodeSnowflakeId?other=1").result() == http::status::bad_request);
}

TEST_CASE("HTTP snowflake: Leaf's /api/snowflake/get/{key} gives the bare ID as text") {
  Fixture f;
  f.Grant();
  auto r = f.Get("/api/snowflake/get/order");
  REQUIRE(r.result() == http::status::ok);
  CHECK(Type(r) == "text/plain");
  CHECK(r.body() == std::to_string(LeafId(kT0, kWorker, 0)));
  // The key is ignored: another key continues the same sequence.
  CHECK(f.Get("/api/snowflake/get/other.key").body() == std::to_string(LeafId(kT0, kWorker, 1)));
  CHECK(f.Get("/api/snowflake/get/a%3Ab").result() == http::status::ok);  // "a:b"

  // ...but checked like any key; errors are JSON with their own status.
  for (std::string key : std::vector<std::string>{"bad%09key", "%zz", std::string(256, 'k')}) {
    INFO(key);
    auto bad = f.Get("/api/snowflake/get/" + key);
    CHECK(bad.result() == http::status::bad_request);
    CHECK(Type(bad) == "application/json");
    CHECK(ErrCode(bad) == "invalid_argument");
  }
  CHECK(f.Get("/api/snowflake/get/").result() == http::status::bad_request);  // empty key
}

TEST_CASE("HTTP snowflake: Leaf's /decodeSnowflakeId answers Leaf's shape, in UTC") {
  Fixture f;
  // Leaf's own example (its JVM printed 09:35 in UTC+8).
  const int64_t id = LeafId(1567733700834, 39, 3448);
  auto r = f.Get("/decodeSnowflakeId?snowflakeId=" + std::to_string(id));
  REQUIRE(r.result() == http::status::ok);
  CHECK(Type(r) == "application/json");
  CHECK(r.body() == R"x({"timestamp":"1567733700834(2019-09-06 01:35:00.834)",)x"
                    R"("sequenceId":"3448","workerId":"39"})");
  auto other =
      Json(f.Get("/decodeSnowflakeId?x=1&snowflakeId=" + std::to_string(LeafId(kT0, 5, 1))));
  CHECK(other["timestamp"] == "1795360448589(2026-11-22 15:14:08.589)");
  CHECK(other["workerId"] == "5");
  CHECK(other["sequenceId"] == "1");
}

TEST_CASE("HTTP snowflake: other methods are 405 with Allow: GET") {
  Fixture f;
  f.Grant();
  for (std::string target : {"/snowflake", "/snowflake?count=2", "/snowflake/decode/1",
                             "/api/snowflake/get/order", "/decodeSnowflakeId?snowflakeId=1"}) {
    for (http::verb m : {http::verb::post, http::verb::put, http::verb::delete_}) {
      INFO(target << " " << http::to_string(m));
      auto r = f.Get(target, "", m);
      CHECK(r.result() == http::status::method_not_allowed);
      CHECK(r[http::field::allow] == "GET");
      CHECK(ErrCode(r) == "method_not_allowed");
    }
  }
  CHECK(f.generator.status().issued == 0);  // nothing was issued by them
}

TEST_CASE("HTTP snowflake: with snowflake off every snowflake path is 404") {
  Fixture off(OffOptions());
  for (ApiRouter* router : {&off.router}) {
    for (std::string target : {"/snowflake", "/snowflake?count=2", "/snowflake/decode/1",
                               "/api/snowflake/get/order", "/decodeSnowflakeId?snowflakeId=1"}) {
      for (http::verb m : {http::verb::get, http::verb::post}) {
        INFO(target);
        std::optional<ApiRouter::Response> out;
        router->Handle(ApiRouter::Request{m, target, 11},
                       [&](ApiRouter::Response res) { out = std::move(res); });
        REQUIRE(out);
        CHECK(out->result() == http::status::not_found);
        CHECK(ErrCode(*out) == "not_found");
        CHECK(ErrorMessage(*out) == "snowflake IDs are disabled");
      }
    }
  }
}

TEST_CASE("HTTP snowflake: an admin-only router does not serve them") {
  Fixture f(DefaultOptions(), /*admin_only=*/true);
  f.Grant();
  for (std::string target : {"/snowflake", "/snowflake/decode/1", "/api/snowflake/get/order",
                             "/decodeSnowflakeId?snowflakeId=1"}) {
    INFO(target);
    auto r = f.Get(target);
    CHECK(r.result() == http::status::not_found);
    CHECK(ErrorMessage(r).rfind("no such endpoint", 0) == 0);
  }
  CHECK(f.generator.status().issued == 0);
}

TEST_CASE("HTTP snowflake: near misses of the paths are ordinary 404s") {
  Fixture f;
  f.Grant();
  for (std::string target : {"/snowflake/", "/snowflake/decode", "/snowflake/decode/1/x",
                             "/api/snowflake/get", "/api/snowflake/next/order", "/Snowflake"}) {
    INFO(target);
    auto r = f.Get(target);
    CHECK(r.result() == http::status::not_found);
    CHECK(ErrorMessage(r).rfind("no such endpoint", 0) == 0);
  }
}

TEST_CASE("HTTP snowflake: requests are counted as op snowflake and snowflake_decode") {
  Fixture f;
  Metrics& metrics = f.metrics;
  CHECK(f.Get("/snowflake").result() == http::status::service_unavailable);
  f.Grant();
  CHECK(f.Get("/snowflake").result() == http::status::ok);
  CHECK(f.Get("/snowflake?count=2").result() == http::status::ok);
  CHECK(f.Get("/api/snowflake/get/k").result() == http::status::ok);
  CHECK(f.Get("/snowflake?count=0").result() == http::status::bad_request);
  CHECK(f.Get("/snowflake/decode/1").result() == http::status::ok);
  CHECK(f.Get("/decodeSnowflakeId?snowflakeId=1").result() == http::status::ok);
  CHECK(f.Get("/decodeSnowflakeId?snowflakeId=x").result() == http::status::bad_request);
  CHECK(f.Get("/snowflake", "", http::verb::post).result() == http::status::method_not_allowed);

  const std::string text = metrics.Render();
  auto has = [&](const std::string& series) {
    INFO(series);
    CHECK(text.find(R"(seqd_requests_total{interface="http",)" + series) != std::string::npos);
  };
  has(R"(op="snowflake",status="ok"} 3)");
  has(R"(op="snowflake",status="not_serving"} 1)");
  has(R"(op="snowflake",status="invalid_argument"} 1)");
  has(R"(op="snowflake",status="method_not_allowed"} 1)");
  has(R"(op="snowflake_decode",status="ok"} 2)");
  has(R"(op="snowflake_decode",status="invalid_argument"} 1)");
}

TEST_CASE("HTTP snowflake: GET /admin/snowflake shows the generator's state") {
  Fixture f;
  auto before = f.Get("/admin/snowflake");
  REQUIRE(before.result() == http::status::ok);
  json b = Json(before);
  CHECK(b["serving"] == false);
  CHECK(b["why_not"] == "no worker id leased yet");
  CHECK(b["worker_id"] == -1);
  CHECK(b["layout"]["time_bits"] == 41);
  CHECK(b["layout"]["epoch_ms"] == kLeafEpochMs);

  f.Grant();
  REQUIRE(f.Get("/snowflake?count=3").result() == http::status::ok);
  json a = Json(f.Get("/admin/snowflake"));
  CHECK(a["serving"] == true);
  CHECK(a["why_not"].is_null());
  CHECK(a["worker_id"] == kWorker);
  CHECK(a["issued"] == 3);
  CHECK(a["last_time_ms"] == kT0);
  CHECK(a["lease_left_s"].get<double>() > 3500);

  CHECK(f.Get("/admin/snowflake", "", http::verb::post).result() ==
        http::status::method_not_allowed);
  Fixture off(OffOptions());
  CHECK(off.Get("/admin/snowflake").result() == http::status::not_found);
}

TEST_CASE("HTTP snowflake: the status page has a Snowflake section and a banner when refusing") {
  // The page checks the store on the database runner first.
  auto page_of = [](Fixture& fx) {
    auto fut = fx.Start(http::verb::get, "/");
    fx.runner.RunAll();
    REQUIRE(fut.wait_for(0s) == std::future_status::ready);
    return fut.get();
  };
  Fixture f;
  auto page = page_of(f);
  REQUIRE(page.result() == http::status::ok);
  CHECK(page.body().find("id=\"snowflake\"") != std::string::npos);
  CHECK(page.body().find("id=\"snowflake-down\"") != std::string::npos);
  CHECK(page.body().find("no worker id leased yet") != std::string::npos);
  f.Grant();
  auto serving = page_of(f);
  CHECK(serving.body().find("id=\"snowflake-down\"") == std::string::npos);
  CHECK(serving.body().find(">serving<") != std::string::npos);
  Fixture off(OffOptions());
  CHECK(page_of(off).body().find("id=\"snowflake\"") == std::string::npos);
}
