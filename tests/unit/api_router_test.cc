// ApiRouter without sockets: real allocator and admin over an in-memory
// store, database tasks and time driven by the test.
#include "server/http/api_router.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/http_util.h"
#include "storage/faulty_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"
#include "tests/unit/test_stores.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// The stores a Fixture's router runs on; a base so that they are built
// before the router and outlive it.
struct FixtureStores {
  MemoryStore mem;
  FaultyStore faulty{mem};
  FailingSegmentStore broken_store = BrokenStore();
};

// A router up for 5 s over `faulty` (over `mem`), or over a store that
// always fails when `broken`.
struct Fixture : FixtureStores, RouterFixture {
  explicit Fixture(KeyRules rules = KeyRules(), bool broken = false)
      : RouterFixture(broken ? static_cast<SegmentStore&>(broken_store) : faulty, 5s,
                      std::move(rules)) {}
};

// Checks an error response's status, code and (optionally) message substring.
void CheckError(const ApiRouter::Response& res, http::status status, std::string_view code,
                std::string_view message_part = "") {
  INFO(res.body());
  CHECK(res.result() == status);
  CHECK(Header(res, http::field::content_type) == "application/json");
  json j = Body(res);
  REQUIRE(j.contains("error"));
  CHECK(j["error"]["code"] == code);
  CHECK(j["error"]["message"].is_string());
  if (!message_part.empty()) {
    CHECK(j["error"]["message"].get<std::string>().find(message_part) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("GET /seq/{key} returns consecutive IDs as JSON") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("orders", 10, "").ok());
  auto res = f.Get("/seq/orders");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "application/json");
  CHECK(Header(res, http::field::cache_control) == "no-store");
  CHECK(Body(res) == json{{"key", "orders"}, {"id", 1}});
  CHECK(Body(f.Get("/seq/orders"))["id"] == 2);
}

TEST_CASE("GET /seq/{key}?count=N returns ranges covering N IDs") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("k", 3, "").ok());
  CHECK(Body(f.Get("/seq/k"))["id"] == 1);
  auto res = f.Get("/seq/k?count=5");
  REQUIRE(res.result() == http::status::ok);
  json j = Body(res);
  CHECK(j["key"] == "k");
  CHECK(j["count"] == 5);
  REQUIRE(j["ranges"].is_array());
  std::vector<int64_t> ids;
  for (const json& r : j["ranges"]) {
    for (int64_t id = r["first"].get<int64_t>(); id <= r["last"].get<int64_t>(); ++id) {
      ids.push_back(id);
    }
  }
  CHECK(ids == std::vector<int64_t>{2, 3, 4, 5, 6});
  // count=1 still uses the batch shape.
  j = Body(f.Get("/seq/k?other=x&count=1"));
  CHECK(j["count"] == 1);
  CHECK(j["ranges"] == json::array({{{"first", 7}, {"last", 7}}}));
}

TEST_CASE("GET /seq/{key} with Accept: text/plain returns one ID per line") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("k", 100, "").ok());
  auto res = f.Get("/seq/k?count=3", {{http::field::accept, "text/plain"}});
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "text/plain");
  CHECK(res.body() == "1\n2\n3\n");
  res = f.Get("/seq/k", {{http::field::accept, "Text/Plain; q=0.9"}});
  CHECK(res.body() == "4\n");
  // Asking for JSON too keeps JSON.
  res = f.Get("/seq/k", {{http::field::accept, "text/plain, application/json"}});
  CHECK(Header(res, http::field::content_type) == "application/json");
  CHECK(Body(res)["id"] == 5);
}

TEST_CASE("Leaf-compatible /api/segment/get/{key}") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("leaf", 10, "").ok());
  auto res = f.Get("/api/segment/get/leaf");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "text/plain");
  CHECK(Header(res, http::field::cache_control) == "no-store");
  CHECK(res.body() == "1");
  CHECK(f.Get("/api/segment/get/leaf").body() == "2");

  res = f.Get("/api/segment/get/missing");
  CHECK(res.result() == http::status::not_found);
  CHECK(Header(res, http::field::content_type) == "text/plain");
  CHECK(!res.body().empty());
  CHECK(res.body()[0] != '{');

  res = f.Get("/api/segment/get/bad%zz");
  CHECK(res.result() == http::status::bad_request);
  CHECK(Header(res, http::field::content_type) == "text/plain");

  res = f.Call(http::verb::post, "/api/segment/get/leaf");
  CHECK(res.result() == http::status::method_not_allowed);
  CHECK(Header(res, http::field::allow) == "GET");
}

TEST_CASE("count must be an integer in [1, max_count]") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  for (const char* bad : {"0", "-1", "abc", "", "1e3", "99999999999999999999", "10001", "+5", " 5",
                          "5%20", "1.0", "0x10"}) {
    INFO("count=" << bad);
    CheckError(f.Get(std::string("/seq/k?count=") + bad), http::status::bad_request,
               "invalid_argument", "count must be an integer in [1, 10000]");
  }
  CheckError(f.Get("/seq/k?count"), http::status::bad_request, "invalid_argument", "count");
  CHECK(f.Get("/seq/k?count=10000").result() == http::status::ok);
  CHECK(f.Get("/seq/k?count=007").result() == http::status::ok);
}

TEST_CASE("bad keys are rejected with 400") {
  Fixture f;
  CheckError(f.Get("/seq/" + std::string(kMaxKeyLength + 1, 'a')), http::status::bad_request,
             "invalid_argument", "255");
  for (const char* target :
       {"/seq/a%09b", "/seq/a%00b", "/seq/a%FFb", "/seq/", "/seq/%C3", "/seq/%C2%85", "/seq/%7F"}) {
    INFO(target);
    CheckError(f.Get(target), http::status::bad_request, "invalid_argument");
  }
  for (const char* target : {"/seq/a%zz", "/seq/a%2", "/seq/%", "/seq/a%g0"}) {
    INFO(target);
    CheckError(f.Get(target), http::status::bad_request, "invalid_argument", "percent");
  }
  CHECK(f.runner.pending() == 0);  // nothing reached the store
}

TEST_CASE("percent-encoded key characters are decoded") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("a:b@c", 10, "").ok());
  auto res = f.Get("/seq/a%3Ab%40c");
  CHECK(res.result() == http::status::ok);
  CHECK(Body(res)["key"] == "a:b@c");
}

TEST_CASE("unknown key is 404 unless an auto-create rule matches") {
  Fixture f(KeyRules({{"sg_", 100}}));
  CheckError(f.Get("/seq/nope"), http::status::not_found, "unknown_key");
  CheckError(f.Get("/admin/keys/nope"), http::status::not_found, "unknown_key");

  auto res = f.Get("/seq/sg_42?count=2");
  CHECK(res.result() == http::status::ok);
  CHECK(Body(res)["count"] == 2);

  json cache = Body(f.Get("/admin/cache"));
  REQUIRE(cache["keys"].size() == 1);
  json snap = cache["keys"][0];
  CHECK(snap["key"] == "sg_42");
  CHECK(snap["auto_created"] == true);
  CHECK(snap["table_step"] == 100);
  CHECK(snap["current"]["ready"] == true);
  CHECK(snap["current"]["remaining"] ==
        snap["current"]["last"].get<int64_t>() - snap["current"]["next"].get<int64_t>() + 1);
  CHECK(snap["last_error"].is_null());
  for (const char* field : {"loading", "step", "parked", "reservations", "idle_ms", "next"}) {
    CHECK_MESSAGE(snap.contains(field), field);
  }
  // The row now exists and shows its in-memory state.
  json row = Body(f.Get("/admin/keys/sg_42"));
  CHECK(row["key"] == "sg_42");
  CHECK(row["cache"]["key"] == "sg_42");
}

TEST_CASE("admin: create, get, list, set step") {
  Fixture f;
  auto res = f.Call(http::verb::post, "/admin/keys",
                    R"({"key":"alpha","step":500,"description":"first"})");
  CHECK(res.result() == http::status::created);
  json row = Body(res);
  CHECK(row["key"] == "alpha");
  CHECK(row["step"] == 500);
  CHECK(row["max_id"] == 1);
  CHECK(row["description"] == "first");
  CHECK(row.contains("update_time_ms"));

  res = f.Call(http::verb::post, "/admin/keys", R"({"key":"beta","step":10})");
  CHECK(res.result() == http::status::created);
  CHECK(Body(res)["description"] == "");
  REQUIRE(f.Call(http::verb::post, "/admin/keys", R"({"key":"gamma","step":10})").result() ==
          http::status::created);

  CheckError(f.Call(http::verb::post, "/admin/keys", R"({"key":"alpha","step":1})"),
             http::status::conflict, "key_exists");

  row = Body(f.Get("/admin/keys/alpha"));
  CHECK(row["step"] == 500);
  CHECK(row["cache"].is_null());
  REQUIRE(f.Get("/seq/alpha").result() == http::status::ok);
  row = Body(f.Get("/admin/keys/alpha"));
  CHECK(row["cache"]["current"]["ready"] == true);
  CHECK(row["cache"]["table_step"] == 500);

  json page = Body(f.Get("/admin/keys?limit=2"));
  REQUIRE(page["keys"].size() == 2);
  CHECK(page["keys"][0]["key"] == "alpha");
  CHECK(page["keys"][0]["cache"].is_object());
  CHECK(page["keys"][1]["key"] == "beta");
  CHECK(page["keys"][1]["cache"].is_null());
  CHECK(page["next_after"] == "beta");
  page = Body(f.Get("/admin/keys?after=beta&limit=2"));
  REQUIRE(page["keys"].size() == 1);
  CHECK(page["keys"][0]["key"] == "gamma");
  CHECK(page["next_after"].is_null());
  CHECK(Body(f.Get("/admin/keys"))["keys"].size() == 3);
  CheckError(f.Get("/admin/keys?limit=0"), http::status::bad_request, "invalid_argument", "limit");
  CheckError(f.Get("/admin/keys?limit=1001"), http::status::bad_request, "invalid_argument",
             "[1, 1000]");

  res = f.Call(http::verb::put, "/admin/keys/alpha/step", R"({"step":2000})");
  CHECK(res.result() == http::status::ok);
  CHECK(Body(res)["step"] == 2000);
  CHECK(Body(f.Get("/admin/keys/alpha"))["cache"]["table_step"] == 2000);
  CheckError(f.Call(http::verb::put, "/admin/keys/nope/step", R"({"step":5})"),
             http::status::not_found, "unknown_key");
  CheckError(f.Call(http::verb::put, "/admin/keys/alpha/step", R"({"step":0})"),
             http::status::bad_request, "invalid_argument", "step");
  CheckError(f.Call(http::verb::put, "/admin/keys/alpha/step", R"({"step":"5"})"),
             http::status::bad_request, "invalid_argument", "'step'");
}

TEST_CASE("admin list: a full page past a reserved row goes on after it, not from the start") {
  Fixture f;
  // Rows r1, "seqd.x" (reserved: never listed), t1, t2, t3.
  for (const char* k : {"r1", "t1", "t2", "t3"}) {
    REQUIRE(
        f.Call(http::verb::post, "/admin/keys", std::string(R"({"key":")") + k + R"(","step":10})")
            .result() == http::status::created);
  }
  REQUIRE(f.mem.CreateKey("seqd.x", 1, "reserved"));
  json page = Body(f.Get("/admin/keys?limit=3"));
  REQUIRE(page["keys"].size() == 3);
  CHECK(page["keys"][0]["key"] == "r1");
  CHECK(page["keys"][1]["key"] == "t1");
  CHECK(page["keys"][2]["key"] == "t2");  // filled from the rows after t1
  CHECK(page["next_after"] == "t2");
  page = Body(f.Get("/admin/keys?after=t2&limit=3"));
  REQUIRE(page["keys"].size() == 1);
  CHECK(page["keys"][0]["key"] == "t3");
  CHECK(page["next_after"].is_null());
}

TEST_CASE("user seqs over HTTP: set, raise, read by query and by body; bad requests named") {
  Fixture f;
  auto put = [&](std::string body) {
    return f.Call(http::verb::put, "/user_seqs", std::move(body));
  };
  json set =
      Body(put(R"({"user":"u1","field":"read","raise_only":true,"seqs":{"si_a":9,"sg_b":2}})"));
  CHECK(set == json::parse(R"({"user":"u1","field":"read","set":{"si_a":9,"sg_b":2}})"));
  REQUIRE(put(R"({"user":"u1","field":"read","raise_only":true,"seqs":{"si_a":4}})").result() ==
          http::status::ok);
  REQUIRE(put(R"({"user":"u1","field":"max","seqs":{"si_a":30}})").result() == http::status::ok);
  json got = Body(f.Get("/user_seqs?user=u1&field=read&conv=si_a&conv=sg_b&conv=n_none"));
  CHECK(got["seqs"] ==
        json::parse(R"({"si_a":9,"sg_b":2,"n_none":0})"));  // the lower raise ignored
  got = Body(
      f.Call(http::verb::post, "/user_seqs", R"({"user":"u1","field":"max","convs":["si_a"]})"));
  CHECK(got == json::parse(R"({"user":"u1","field":"max","seqs":{"si_a":30}})"));
  CHECK(Body(f.Get("/user_seqs?user=u%31&field=min&conv=si_a"))["seqs"]["si_a"] == 0);
  CheckError(f.Get("/user_seqs?field=read&conv=a"), http::status::bad_request, "invalid_argument",
             "user");
  CheckError(f.Get("/user_seqs?user=u1&field=unread&conv=a"), http::status::bad_request,
             "invalid_argument", "min, max or read");
  CheckError(put(R"({"user":"u1","field":"read","raise_only":"yes","seqs":{"a":1}})"),
             http::status::bad_request, "invalid_argument", "raise_only");
  CheckError(put(R"({"user":"u1","field":"read","seqs":{"a":-1}})"), http::status::bad_request,
             "invalid_argument", ">= 0");
  CheckError(put(R"({"user":"u1","field":"read","seqs":{"a":1,"a":2}})"), http::status::bad_request,
             "invalid_argument", "twice");
  CheckError(put(R"({"user":"","field":"read","seqs":{"a":1}})"), http::status::bad_request,
             "invalid_argument", "user id");
  CHECK(f.Call(http::verb::delete_, "/user_seqs").result() == http::status::method_not_allowed);
}

TEST_CASE("admin create rejects bad bodies, naming the field") {
  Fixture f;
  auto post = [&](std::string body) {
    return f.Call(http::verb::post, "/admin/keys", std::move(body));
  };
  CheckError(post("{not json"), http::status::bad_request, "invalid_argument", "JSON");
  CheckError(post(""), http::status::bad_request, "invalid_argument", "JSON");
  CheckError(post("[1,2]"), http::status::bad_request, "invalid_argument", "object");
  CheckError(post(R"({"step":5})"), http::status::bad_request, "invalid_argument", "'key'");
  CheckError(post(R"({"key":5,"step":5})"), http::status::bad_request, "invalid_argument", "'key'");
  CheckError(post(R"({"key":"k"})"), http::status::bad_request, "invalid_argument", "'step'");
  CheckError(post(R"({"key":"k","step":1.5})"), http::status::bad_request, "invalid_argument",
             "'step'");
  CheckError(post(R"({"key":"k","step":99999999999999999999})"), http::status::bad_request,
             "invalid_argument", "step");
  CheckError(post(R"({"key":"k","step":5,"description":7})"), http::status::bad_request,
             "invalid_argument", "'description'");
  CheckError(post(R"({"key":"bad\tkey","step":5})"), http::status::bad_request, "invalid_argument",
             "key");
  // Invalid UTF-8 in the description never breaks the JSON we send back.
  auto res = post("{\"key\":\"k\",\"step\":5,\"description\":\"\xff\"}");
  CHECK(res.result() == http::status::bad_request);
  Body(res);
}

TEST_CASE("router-level 404 and 405") {
  Fixture f;
  for (const char* target : {"/nope", "//", "/seq", "/seq/a/b", "/admin", "/admin/keys/a/b",
                             "/healthz/", "http://host/healthz", "/metrics/x"}) {
    INFO(target);
    CheckError(f.Get(target), http::status::not_found, "not_found");
  }
  auto res = f.Call(http::verb::post, "/seq/k");
  CheckError(res, http::status::method_not_allowed, "method_not_allowed");
  CHECK(Header(res, http::field::allow) == "GET");
  res = f.Call(http::verb::delete_, "/admin/keys");
  CheckError(res, http::status::method_not_allowed, "method_not_allowed");
  CHECK(Header(res, http::field::allow) == "GET, POST");
  res = f.Call(http::verb::get, "/admin/keys/k/step");
  CHECK(res.result() == http::status::method_not_allowed);
  CHECK(Header(res, http::field::allow) == "PUT");
  res = f.Call(http::verb::head, "/admin/keys/k/step");  // HEAD is GET: not allowed here either
  CHECK(res.result() == http::status::method_not_allowed);
  CHECK(Header(res, http::field::allow) == "PUT");
}

TEST_CASE("HEAD answers as GET does, and takes no IDs") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("k", 10, ""));
  CHECK(f.Call(http::verb::head, "/healthz").result() == http::status::ok);
  CHECK(f.Call(http::verb::head, "/admin/keys").result() == http::status::ok);
  CHECK(f.Call(http::verb::head, "/no/such/route").result() == http::status::not_found);
  // The routes that hand out IDs answer HEAD without taking one.
  auto res = f.Call(http::verb::head, "/seq/k");
  CHECK(res.result() == http::status::ok);
  CHECK(res.body().empty());
  CHECK(f.Call(http::verb::head, "/api/segment/get/k").result() == http::status::ok);
  CHECK(f.Call(http::verb::head, "/seq/bad%zz").result() == http::status::bad_request);
  res = f.Get("/seq/k");
  REQUIRE(res.result() == http::status::ok);
  CHECK(Body(res)["id"] == 1);  // the HEADs took nothing
}

TEST_CASE("OPTIONS answers the methods a route allows") {
  Fixture f;
  auto res = f.Call(http::verb::options, "/seq/order");
  CHECK(res.result() == http::status::no_content);
  CHECK(Header(res, http::field::allow) == "GET, OPTIONS");
  CHECK(res.body().empty());
  CHECK(Header(res, http::field::content_length).empty());
  res = f.Call(http::verb::options, "/admin/keys");
  CHECK(res.result() == http::status::no_content);
  CHECK(Header(res, http::field::allow).find("POST") != std::string::npos);
  CHECK(Header(res, http::field::allow).ends_with(", OPTIONS"));
  // No such route: still 404; other methods still 405.
  CHECK(f.Call(http::verb::options, "/no/such/route").result() == http::status::not_found);
  CHECK(f.Call(http::verb::delete_, "/seq/order").result() == http::status::method_not_allowed);
}

TEST_CASE("healthz, readyz and metrics") {
  Fixture f;
  auto res = f.Call(http::verb::get, "/healthz", "a body on a GET is ignored");
  CHECK(res.result() == http::status::ok);
  json j = Body(res);
  CHECK(j["status"] == "ok");
  CHECK(j["version"] == "9.9.9");
  CHECK(j["uptime_s"].get<int64_t>() >= 5);

  res = f.Get("/readyz");
  CHECK(res.result() == http::status::ok);
  CHECK(Body(res) == json{{"status", "ready"}});
  f.faulty.SetDown(true);
  CheckError(f.Get("/readyz"), http::status::service_unavailable, "store_unavailable");
  f.faulty.SetDown(false);

  res = f.Get("/metrics");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "text/plain; version=0.0.4");

  // Not ready while the store's connections are being opened, whatever the
  // store says.
  bool warming = true;
  RouterOptions options{"9.9.9", std::chrono::steady_clock::now()};
  options.warming = [&warming] { return warming; };
  ApiRouter warm_router(f.services, options);
  auto ready = [&] {
    std::optional<ApiRouter::Response> out;
    warm_router.Handle(ApiRouter::Request{http::verb::get, "/readyz", 11},
                       [&](ApiRouter::Response r) { out = std::move(r); });
    f.runner.RunAll();
    REQUIRE(out);
    return std::move(*out);
  };
  CheckError(ready(), http::status::service_unavailable, "store_unavailable", "connections");
  warming = false;
  CHECK(ready().result() == http::status::ok);
  CHECK(res.body().find("seqd_build_info{version=\"test\"} 1") != std::string::npos);
  CHECK(f.Call(http::verb::post, "/metrics").result() == http::status::method_not_allowed);
}

TEST_CASE("responses follow the request's version and keep-alive") {
  Fixture f;
  auto res = f.Call(http::verb::get, "/healthz", "", {}, 10);
  CHECK(res.version() == 10);
  CHECK(!res.keep_alive());
  res = f.Call(http::verb::get, "/healthz", "", {{http::field::connection, "keep-alive"}}, 10);
  CHECK(res.version() == 10);
  CHECK(res.keep_alive());
  res = f.Call(http::verb::get, "/healthz", "", {{http::field::connection, "close"}});
  CHECK(res.version() == 11);
  CHECK(!res.keep_alive());
  res = f.Get("/healthz");
  CHECK(res.keep_alive());
  CHECK(res[http::field::content_length] == std::to_string(res.body().size()));
}

TEST_CASE("store errors map to statuses; internal errors never leak") {
  Fixture f(KeyRules(), /*broken=*/true);
  for (auto [method, target, body] : std::vector<std::tuple<http::verb, std::string, std::string>>{
           {http::verb::get, "/admin/keys/k", ""},
           {http::verb::get, "/admin/keys", ""},
           {http::verb::post, "/admin/keys", R"({"key":"k","step":5})"},
           {http::verb::put, "/admin/keys/k/step", R"({"step":5})"},
       }) {
    const std::string& path = target;  // clang 14 cannot capture a binding (INFO does)
    INFO(path);
    auto res = f.Call(method, target, body);
    CheckError(res, http::status::internal_server_error, "internal");
    CHECK(Body(res)["error"]["message"] == "internal error");
    CHECK(res.body().find("hunter2") == std::string::npos);
  }
  auto res = f.Get("/readyz");
  CHECK(res.result() == http::status::service_unavailable);
  CHECK(Body(res)["error"]["message"] == "internal error");
  CHECK(res.body().find("hunter2") == std::string::npos);

  // A reservation failing with an internal error. The allocator reports the
  // deadline as kStoreUnavailable; the store's own message must not reach
  // the client.
  res = f.Get("/seq/k");
  CHECK(res.result() == http::status::service_unavailable);
  CHECK_MESSAGE(res.body().find("hunter2") == std::string::npos,
                "allocator leaks the store's error text: " << res.body());
}

TEST_CASE("HttpStatusFor covers every error code") {
  CHECK(HttpStatusFor(ErrorCode::kInvalidArgument) == http::status::bad_request);
  CHECK(HttpStatusFor(ErrorCode::kUnknownKey) == http::status::not_found);
  CHECK(HttpStatusFor(ErrorCode::kKeyExists) == http::status::conflict);
  CHECK(HttpStatusFor(ErrorCode::kStoreUnavailable) == http::status::service_unavailable);
  CHECK(HttpStatusFor(ErrorCode::kShuttingDown) == http::status::service_unavailable);
  CHECK(HttpStatusFor(ErrorCode::kInternal) == http::status::internal_server_error);
}

TEST_CASE("shutting down maps to 503") {
  Fixture f;
  REQUIRE(f.mem.CreateKey("k", 10, "").ok());
  f.allocator.Shutdown();
  CheckError(f.Get("/seq/k"), http::status::service_unavailable, "shutting_down");
}
