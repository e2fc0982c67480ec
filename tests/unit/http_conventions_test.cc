// HTTP conventions and the reserved key namespace through ApiRouter (no
// sockets; the connection's side is in http_server_test): the CSRF rule
// after routing, Location on 201, Leaf's /cache and /db, and keys starting
// "seqd." (the message service's own) hidden from and refused to clients.
// The allocator, key admin and message service share one memory store, as
// in seqd.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/key_rules.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/http/http_request.h"
#include "server/msg/message_service.h"
#include "server/msg/server_msg_id_source.h"
#include "server/service/wire_errors.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

using Headers = std::vector<std::pair<http::field, std::string>>;

struct Fixture : AdminOverMemory {
  MemoryMessageStore messages;
  std::unique_ptr<MessageService> service =
      std::make_unique<MessageService>(messages, segments, MessageServiceOptions{});
  TestServices services{segments, runner, allocator,
                        ServiceOverrides{.keys = &admin, .messages = service.get()}};
  ApiRouter router{services, RouterOptions{"t", std::chrono::steady_clock::now()}};

  ~Fixture() {
    runner.RunAll();
    service->Shutdown();
  }

  // `headers` as given: no Content-Type unless the test sets one.
  ApiRouter::Response Call(http::verb method, std::string target, std::string body = "",
                           const Headers& headers = {}) {
    ApiRouter::Request req{method, target, 11};
    for (const auto& [field, value] : headers) req.set(field, value);
    req.body() = std::move(body);
    req.prepare_payload();
    auto p = std::make_shared<std::promise<ApiRouter::Response>>();
    auto f = p->get_future();
    router.Handle(std::move(req), [p](ApiRouter::Response res) { p->set_value(std::move(res)); });
    // Admin calls run on the manual runner, messages on their own threads.
    for (int i = 0; i < 1000 && f.wait_for(5ms) != std::future_status::ready; ++i) {
      runner.RunAll();
    }
    REQUIRE(f.wait_for(0s) == std::future_status::ready);
    return f.get();
  }
  ApiRouter::Response Get(std::string target) { return Call(http::verb::get, std::move(target)); }
  ApiRouter::Response PostJson(std::string target, std::string body) {
    return Call(http::verb::post, std::move(target), std::move(body),
                {{http::field::content_type, "application/json"}});
  }
  ApiRouter::Response Send(const std::string& conv, const std::string& cmid) {
    return PostJson("/conversations/" + conv + "/messages",
                    json{{"sender_id", "u"}, {"client_msg_id", cmid}, {"payload", "hi"}}.dump());
  }
};

std::string Code(const ApiRouter::Response& res) {
  return Body(res)["error"]["code"].get<std::string>();
}

constexpr std::string_view kReserved = "keys starting with 'seqd.' are reserved";

void CheckReservedRefusal(const ApiRouter::Response& res) {
  INFO(res.body());
  CHECK(res.result() == http::status::bad_request);
  if (Header(res, http::field::content_type) == "text/plain") {
    CHECK(res.body().find(kReserved) != std::string::npos);
    return;
  }
  CHECK(Code(res) == "invalid_argument");
  CHECK(Body(res)["error"]["message"] == kReserved);
}

}  // namespace

TEST_CASE("CSRF rule: after 404 and 405; a bare POST passes; what a page can send is 415") {
  Fixture f;
  REQUIRE(f.Send("c", "m1").result() == http::status::created);
  const Headers form = {{http::field::content_type, "application/x-www-form-urlencoded"}};
  // Route first.
  CHECK(f.Call(http::verb::post, "/seq/order", "a=1", form).result() ==
        http::status::method_not_allowed);
  CHECK(f.Call(http::verb::put, "/healthz", "a=1", form).result() ==
        http::status::method_not_allowed);
  CHECK(f.Call(http::verb::post, "/no/such/route", "a=1", form).result() ==
        http::status::not_found);
  CHECK(f.Call(http::verb::put, "/conversations/c/messages", "a=1", form).result() ==
        http::status::method_not_allowed);

  // Recall takes no body: a bare POST (curl -X POST, no Content-Type) runs.
  auto res = f.Call(http::verb::post, "/conversations/c/messages/1/recall");
  CHECK(res.result() == http::status::ok);
  CHECK(Body(res)["status"] == "recalled");
  // What a page on another site can make a browser send is refused: a form
  // (even empty), text/plain, or no type with Origin (fetch, mode no-cors).
  for (const Headers& page :
       {form, Headers{{http::field::content_type, "text/plain"}},
        Headers{{http::field::content_type, "multipart/form-data; boundary=x"}},
        Headers{{http::field::origin, "https://evil.example"}}}) {
    res = f.Call(http::verb::post, "/conversations/c/messages/1/recall", "", page);
    CHECK(res.result() == http::status::unsupported_media_type);
    CHECK(Code(res) == "unsupported_media_type");
  }
  // A body without a type, on any body route.
  for (const char* target :
       {"/admin/keys", "/conversations/c/messages", "/conversations/max_seqs", "/users/u/sync"}) {
    INFO(target);
    CHECK(f.Call(http::verb::post, target, R"({"key":"x","step":5})").result() ==
          http::status::unsupported_media_type);
  }
  for (const char* target : {"/admin/keys/k/step", "/conversations/c/min_seq",
                             "/conversations/c/members/u", "/conversations/c/members/u/read_seq"}) {
    INFO(target);
    CHECK(f.Call(http::verb::put, target, "{}", form).result() ==
          http::status::unsupported_media_type);
  }
  CHECK(f.segments.GetKey("x").error().code == ErrorCode::kUnknownKey);
  // JSON (any case, with parameters) or a bearer token passes the rule.
  res = f.Call(http::verb::post, "/admin/keys", R"({"key":"x","step":5})",
               {{http::field::content_type, "Application/JSON; charset=utf-8"},
                {http::field::origin, "https://app.example"}});
  CHECK(res.result() == http::status::created);
  res = f.Call(
      http::verb::post, "/admin/keys", R"({"key":"y","step":5})",
      {{http::field::content_type, "text/plain"}, {http::field::authorization, "Bearer anything"}});
  CHECK(res.result() == http::status::created);  // open mode: any token is the open principal
  // A bare POST to a route that reads a body is a bad body, not 415.
  CHECK(Code(f.Call(http::verb::post, "/admin/keys")) == "invalid_argument");

  // Counted (and logged) as 415, not as a bad request.
  CHECK(MetricLabelForHttp(415) == "unsupported_media_type");
  const std::string metrics = f.services.metrics().Render();
  CHECK(metrics.find(R"(op="msg_status",status="unsupported_media_type")") != std::string::npos);
  CHECK(metrics.find(R"(op="admin",status="unsupported_media_type")") != std::string::npos);
}

TEST_CASE("RefusedAsCrossSite: the rule alone") {
  HttpRequest r;
  r.method = http::verb::get;
  r.content_type = "text/plain";
  r.has_origin = true;
  CHECK_FALSE(RefusedAsCrossSite(r));  // safe methods are never refused
  r.method = http::verb::delete_;
  CHECK_FALSE(RefusedAsCrossSite(r));  // browsers preflight DELETE
  for (http::verb m : {http::verb::post, http::verb::put, http::verb::patch}) {
    r = HttpRequest{};
    r.method = m;
    CHECK_FALSE(RefusedAsCrossSite(r));  // bare
    r.has_origin = true;
    CHECK(RefusedAsCrossSite(r));
    r.has_origin = false;
    r.body = "{}";
    CHECK(RefusedAsCrossSite(r));
    r.content_type = " application/json ;charset=utf-8";
    CHECK_FALSE(RefusedAsCrossSite(r));
    r.content_type = "application/jsonx";
    CHECK(RefusedAsCrossSite(r));
    r.authorization = "bearer t";
    CHECK_FALSE(RefusedAsCrossSite(r));
    r.authorization = "Basic dTpw";
    CHECK(RefusedAsCrossSite(r));
  }
}

TEST_CASE("201 Created carries Location") {
  Fixture f;
  auto res = f.PostJson("/admin/keys", R"({"key":"a:b@c","step":5})");
  REQUIRE(res.result() == http::status::created);
  CHECK(Header(res, http::field::location) == "/admin/keys/a:b@c");
  CHECK(f.Get(Header(res, http::field::location)).result() == http::status::ok);

  res = f.Send("sg_1", "m1");
  REQUIRE(res.result() == http::status::created);
  CHECK(Header(res, http::field::location) == "/conversations/sg_1/messages/1");
  CHECK(Body(f.Get(Header(res, http::field::location)))["seq"] == 1);
  // A re-send is 200 (nothing created), without Location.
  res = f.Send("sg_1", "m1");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::location).empty());
}

TEST_CASE("Leaf's /cache and /db, in Leaf's field names") {
  Fixture f;
  REQUIRE(f.segments.CreateKey("leaf", 10, "").ok());
  REQUIRE(f.segments.CreateKey("idle", 20, "").ok());
  REQUIRE(f.Get("/seq/leaf?count=3").result() == http::status::ok);

  auto res = f.Get("/cache");
  REQUIRE(res.result() == http::status::ok);
  json cache = Body(res);
  REQUIRE(cache.is_object());
  CHECK(cache.size() == 1);  // keys held in memory only
  const json& v = cache["leaf"];
  CHECK(v["initOk"] == true);
  CHECK(v["key"] == "leaf");
  CHECK(v["pos"] == 0);
  CHECK(v["nextReady"].is_boolean());
  // Segment 0 serves: IDs 1..10 reserved, 3 handed out; max is exclusive.
  CHECK(v["value0"] == 4);
  CHECK(v["max0"] == 11);
  CHECK(v["step0"] == 10);
  for (const char* field : {"value1", "max1", "step1"}) CHECK_MESSAGE(v.contains(field), field);
  if (v["nextReady"] == true) {  // the next segment, 11..20
    CHECK(v["value1"] == 11);
    CHECK(v["max1"] == 21);
  }

  res = f.Get("/db");
  REQUIRE(res.result() == http::status::ok);
  json db = Body(res);
  REQUIRE(db.is_array());
  REQUIRE(db.size() == 2);
  CHECK(db[0]["key"] == "idle");
  CHECK(db[0]["maxId"] == 1);
  CHECK(db[0]["step"] == 20);
  CHECK(db[0]["updateTime"].get<std::string>().size() == 19);  // "YYYY-MM-DD HH:MM:SS"
  CHECK(db[1]["key"] == "leaf");
  CHECK(db[1]["maxId"] >= 11);  // 21 once the next segment is reserved too
  CHECK(Body(f.Get("/db?after=idle&limit=5")).size() == 1);

  CHECK(f.Call(http::verb::post, "/cache").result() == http::status::method_not_allowed);
  CHECK(f.Call(http::verb::delete_, "/db").result() == http::status::method_not_allowed);
  const std::string metrics = f.services.metrics().Render();
  CHECK(metrics.find(R"(op="leaf_monitor",status="ok")") != std::string::npos);
}

TEST_CASE("reserved keys: the message service still uses its key; clients never see it") {
  Fixture f;
  REQUIRE(f.segments.CreateKey("a", 10, "").ok());
  REQUIRE(f.segments.CreateKey("z", 10, "").ok());
  // The message service creates and uses seqd.server_msg_id itself.
  REQUIRE(f.Send("c", "m1").result() == http::status::created);
  const KeyRow row = *f.segments.GetKey(kServerMsgIdKey);
  CHECK(row.max_id > 1);

  // Not served on any HTTP route, HEAD included; a key not in the store yet
  // is refused the same way.
  for (std::string key : {std::string(kServerMsgIdKey), std::string("seqd.new")}) {
    INFO(key);
    CheckReservedRefusal(f.Get("/seq/" + key));
    CheckReservedRefusal(f.Get("/seq/" + key + "?count=5"));
    CheckReservedRefusal(f.Call(http::verb::head, "/seq/" + key));
    CheckReservedRefusal(f.Get("/api/segment/get/" + key));
    CheckReservedRefusal(f.Call(http::verb::head, "/api/segment/get/" + key));
    CheckReservedRefusal(f.Get("/admin/keys/" + key));
    // Its step cannot be changed, and none can be created.
    CheckReservedRefusal(f.Call(http::verb::put, "/admin/keys/" + key + "/step", R"({"step":1})",
                                {{http::field::content_type, "application/json"}}));
    CheckReservedRefusal(f.PostJson("/admin/keys", json{{"key", key}, {"step", 5}}.dump()));
  }
  CHECK(f.segments.GetKey("seqd.new").error().code == ErrorCode::kUnknownKey);
  CHECK(f.segments.GetKey(kServerMsgIdKey)->step == row.step);
  CHECK(f.segments.GetKey(kServerMsgIdKey)->max_id == row.max_id);

  // Not listed: /admin/keys (a page of one walks past it), /db, /admin/cache,
  // /cache, the status page.
  json page = Body(f.Get("/admin/keys"));
  REQUIRE(page["keys"].size() == 2);
  CHECK(page["keys"][0]["key"] == "a");
  CHECK(page["keys"][1]["key"] == "z");
  page = Body(f.Get("/admin/keys?after=a&limit=1"));
  REQUIRE(page["keys"].size() == 1);
  CHECK(page["keys"][0]["key"] == "z");
  CHECK(page["next_after"] == "z");
  CHECK(Body(f.Get("/admin/keys?after=z&limit=1"))["keys"].empty());
  json db = Body(f.Get("/db"));
  REQUIRE(db.size() == 2);
  CHECK(db[1]["key"] == "z");
  for (const char* target : {"/admin/cache", "/cache", "/"}) {
    INFO(target);
    auto res = f.Get(target);
    CHECK(res.result() == http::status::ok);
    CHECK(res.body().find("seqd.") == std::string::npos);
  }
  CHECK(f.Get("/").body().find(">z<") != std::string::npos);

  // And the message service goes on from its key as before.
  auto res = f.Send("c", "m2");
  REQUIRE(res.result() == http::status::created);
  CHECK(Body(res)["server_msg_id"].get<int64_t>() > 0);
}

TEST_CASE("KeyRules: the reserved namespace") {
  CHECK(KeyIsReserved("seqd.server_msg_id"));
  CHECK(KeyIsReserved("seqd."));
  CHECK_FALSE(KeyIsReserved("seqd"));
  CHECK_FALSE(KeyIsReserved("seqd_x"));
  CHECK_FALSE(KeyIsReserved("Seqd.x"));
  CHECK(ValidateKeyText("seqd.x").ok());  // conversation and user ids may use it
  CHECK(ValidateClientKey("seqd.x").error().message == kReserved);
  CHECK(ValidateClientKey("a\tb").error().message.find("control") != std::string::npos);
  CHECK(ValidateClientKey("sg_1").ok());
}
