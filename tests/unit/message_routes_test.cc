// The message store's HTTP endpoints through ApiRouter (no sockets), over the
// real MessageService on in-memory stores.
#include "server/http/routes/message_routes.h"

#include <doctest/doctest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/msg/message_service.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// "prefix" + n, spelled so GCC 12 does not warn (-Wrestrict false positive).
std::string Id(std::string prefix, int n) {
  prefix += std::to_string(n);
  return prefix;
}

struct Fixture : AdminOverMemory {
  MemoryMessageStore messages;
  std::unique_ptr<MessageService> service;
  std::unique_ptr<TestServices> services;
  std::unique_ptr<ApiRouter> router_;
  ApiRouter& router;

  explicit Fixture(MessageServiceOptions o = {})
      : service(std::make_unique<MessageService>(messages, segments, o)),
        services(std::make_unique<TestServices>(
            segments, runner, allocator,
            ServiceOverrides{.keys = &admin, .messages = service.get()})),
        router_(std::make_unique<ApiRouter>(*services,
                                            RouterOptions{"t", std::chrono::steady_clock::now()})),
        router(*router_) {}
  ~Fixture() { service->Shutdown(); }

  ApiRouter::Response Call(http::verb method, std::string target, std::string body = "") {
    ApiRouter::Request req{method, target, 11};
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
    std::promise<ApiRouter::Response> p;
    auto f = p.get_future();
    router.Handle(std::move(req), [&p](ApiRouter::Response res) { p.set_value(std::move(res)); });
    REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    return f.get();
  }
  json Json(const ApiRouter::Response& res) { return json::parse(res.body()); }
  ApiRouter::Response Send(const std::string& conv, const std::string& sender,
                           const std::string& cmid, const std::string& payload = "hi") {
    json body = {
        {"sender_id", sender}, {"client_msg_id", cmid}, {"content_type", 1}, {"payload", payload}};
    return Call(http::verb::post, "/conversations/" + conv + "/messages", body.dump());
  }
};

std::string ErrorCode(const json& j) { return j["error"]["code"].get<std::string>(); }

TEST_CASE("HTTP: send, re-send and pull") {
  Fixture f;
  auto r = f.Send("sg_1", "alice", "m1", "hello \"world\"");
  REQUIRE(r.result() == http::status::created);
  json sent = f.Json(r);
  CHECK(sent["seq"] == 1);
  CHECK(sent["server_msg_id"].get<int64_t>() > 0);
  CHECK(sent["send_time"].get<int64_t>() > 0);
  CHECK(sent["duplicate"] == false);
  auto again = f.Send("sg_1", "alice", "m1", "hello \"world\"");
  CHECK(again.result() == http::status::ok);
  CHECK(f.Json(again)["seq"] == 1);
  CHECK(f.Json(again)["duplicate"] == true);
  // Another payload under the same client id: another message, refused.
  auto other = f.Send("sg_1", "alice", "m1", "other");
  CHECK(other.result() == http::status::conflict);
  CHECK(ErrorCode(f.Json(other)) == "message_id_conflict");
  CHECK(f.Json(other)["error"]["message"].get<std::string>().find("seq 1") != std::string::npos);
  for (int i = 2; i <= 5; ++i)
    REQUIRE(f.Send("sg_1", "bob", Id("b", i)).result() == http::status::created);

  auto pull = f.Call(http::verb::get, "/conversations/sg_1/messages?from=2&to=4&limit=2");
  REQUIRE(pull.result() == http::status::ok);
  json page = f.Json(pull);
  REQUIRE(page["messages"].size() == 2);
  CHECK(page["messages"][0]["seq"] == 2);
  CHECK(page["messages"][0]["sender_id"] == "bob");
  CHECK(page["messages"][0]["client_msg_id"] == "b2");
  CHECK(page["messages"][0]["status"] == "normal");
  CHECK(page["is_end"] == false);
  page = f.Json(f.Call(http::verb::get, "/conversations/sg_1/messages?order=desc&limit=10"));
  REQUIRE(page["messages"].size() == 5);
  CHECK(page["messages"][0]["seq"] == 5);
  CHECK(page["messages"][4]["payload"] == "hello \"world\"");
  CHECK(page["is_end"] == true);
  page = f.Json(f.Call(http::verb::get, "/conversations/sg_1/messages?seqs=5,1,99"));
  REQUIRE(page["messages"].size() == 2);
  CHECK(page["messages"][0]["seq"] == 1);
  auto one = f.Call(http::verb::get, "/conversations/sg_1/messages/3");
  CHECK(f.Json(one)["seq"] == 3);
  CHECK(f.Call(http::verb::get, "/conversations/sg_1/messages/30").result() ==
        http::status::not_found);
}

TEST_CASE("HTTP: bad input gets 400/413/405 with a clear message") {
  MessageServiceOptions o;
  o.max_payload_bytes = 100;
  Fixture f(o);
  auto big = f.Send("c", "u", "m", std::string(101, 'x'));
  CHECK(big.result() == http::status::payload_too_large);
  CHECK(ErrorCode(f.Json(big)) == "too_large");
  CHECK(f.Send("c%09d", "u", "m").result() == http::status::bad_request);
  CHECK(f.Send("c", "", "m").result() == http::status::bad_request);
  auto no_sender = f.Call(http::verb::post, "/conversations/c/messages",
                          R"({"client_msg_id":"m","payload":"x"})");
  CHECK(no_sender.result() == http::status::bad_request);
  CHECK(f.Json(no_sender)["error"]["message"] == "field 'sender_id' is required");
  CHECK(f.Call(http::verb::post, "/conversations/c/messages", "not json").result() ==
        http::status::bad_request);
  CHECK(f.Call(http::verb::post, "/conversations/c/messages",
               R"({"sender_id":"u","client_msg_id":"m","payload":"x","content_type":99999999999})")
            .result() == http::status::bad_request);
  for (const char* q : {"limit=0", "limit=1001", "limit=-1", "from=0", "from=abc", "from=5&to=4",
                        "order=up", "seqs=1,x", "seqs=", "to=99999999999999999999"}) {
    auto res = f.Call(http::verb::get, std::string("/conversations/c/messages?") + q);
    CHECK_MESSAGE(res.result() == http::status::bad_request, q);
  }
  auto put = f.Call(http::verb::put, "/conversations/c/messages");
  CHECK(put.result() == http::status::method_not_allowed);
  CHECK(put[http::field::allow] == "GET, POST");
  CHECK(f.Call(http::verb::get, "/conversations/c/nothing").result() == http::status::not_found);
  json many = {{"conv_ids", std::vector<std::string>(1001, "c")}};
  CHECK(f.Call(http::verb::post, "/conversations/max_seqs", many.dump()).result() ==
        http::status::payload_too_large);
}

TEST_CASE("HTTP: members, read seq, sync, max seqs, recall and delete") {
  Fixture f;
  for (int i = 1; i <= 4; ++i)
    REQUIRE(f.Send("g", "bob", std::to_string(i)).result() == http::status::created);
  auto member = f.Call(http::verb::put, "/conversations/g/members/amy", R"({"min_seq":2})");
  REQUIRE(member.result() == http::status::ok);
  CHECK(f.Json(member)["min_seq"] == 2);
  CHECK(f.Json(member)["max_seq"].is_null());
  CHECK(f.Json(member)["read_seq"] == 1);
  auto read = f.Call(http::verb::put, "/conversations/g/members/amy/read_seq", R"({"read_seq":3})");
  REQUIRE(read.result() == http::status::ok);
  CHECK(f.Json(read)["read_seq"] == 3);
  auto back = f.Call(http::verb::put, "/conversations/g/members/amy/read_seq", R"({"read_seq":2})");
  CHECK(back.result() == http::status::conflict);
  CHECK(ErrorCode(f.Json(back)) == "failed_precondition");
  CHECK(f.Call(http::verb::put, "/conversations/g/members/amy/read_seq", R"({"read_seq":9})")
            .result() == http::status::conflict);
  CHECK(f.Call(http::verb::get, "/conversations/g/members/zed").result() ==
        http::status::not_found);
  auto pulled = f.Json(f.Call(http::verb::get, "/conversations/g/messages?user=amy"));
  CHECK(pulled["messages"][0]["seq"] == 2);

  auto sync = f.Call(http::verb::post, "/users/amy/sync", R"({"conv_ids":["g","h"]})");
  REQUIRE(sync.result() == http::status::ok);
  json convs = f.Json(sync)["conversations"];
  CHECK(convs[0]["max_seq"] == 4);
  CHECK(convs[0]["read_seq"] == 3);
  CHECK(convs[0]["unread"] == 1);
  CHECK(convs[1]["max_seq"] == 0);
  auto maxes =
      f.Json(f.Call(http::verb::post, "/conversations/max_seqs", R"({"conv_ids":["g","h"]})"));
  CHECK(maxes["max_seqs"]["g"] == 4);
  CHECK(maxes["max_seqs"]["h"] == 0);

  auto recalled = f.Call(http::verb::post, "/conversations/g/messages/2/recall");
  REQUIRE(recalled.result() == http::status::ok);
  CHECK(f.Json(recalled)["status"] == "recalled");
  CHECK(f.Json(recalled)["payload"] == "");
  auto deleted = f.Call(http::verb::delete_, "/conversations/g/messages/3");
  CHECK(f.Json(deleted)["status"] == "deleted");
  CHECK(f.Call(http::verb::delete_, "/conversations/g/messages/30").result() ==
        http::status::not_found);
  auto min = f.Call(http::verb::put, "/conversations/g/min_seq", R"({"min_seq":3})");
  CHECK(f.Json(min)["min_seq"] == 3);
  auto page = f.Json(f.Call(http::verb::get, "/conversations/g/messages"));
  CHECK(page["messages"][0]["seq"] == 3);
}

}  // namespace
