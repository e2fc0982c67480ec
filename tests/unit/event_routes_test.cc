// Event streams and long-polls through ApiRouter (no sockets), over the real
// MessageService on memory stores, with a manual clock for deadlines and
// heartbeats: the sink stands in for the connection.
#include "server/http/stream/event_routes.h"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/http/stream/event_sink.h"
#include "server/msg/message_service.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

struct Fixture : AdminOverMemory {
  MemoryMessageStore messages;
  MessageService service{messages, segments, MessageServiceOptions{}};
  TestServices services{segments, runner, allocator,
                        ServiceOverrides{.keys = &admin, .messages = &service}};
  std::unique_ptr<ApiRouter> router;

  explicit Fixture(size_t max_streams = 10) {
    RouterOptions o{"t", std::chrono::steady_clock::now()};
    o.streams.clock = &clock;
    o.streams.max_streams = max_streams;
    o.streams.events.heartbeat = std::chrono::seconds(15);
    router = std::make_unique<ApiRouter>(services, o);
  }
  ~Fixture() { service.Shutdown(); }

  std::future<ApiRouter::Response> Start(http::verb method, std::string target,
                                         std::string body = "") {
    ApiRouter::Request req{method, target, 11};
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
    auto p = std::make_shared<std::promise<ApiRouter::Response>>();
    auto f = p->get_future();
    router->Handle(req, [p](ApiRouter::Response res) { p->set_value(std::move(res)); });
    return f;
  }
  ApiRouter::Response Call(http::verb method, std::string target, std::string body = "") {
    auto f = Start(method, std::move(target), std::move(body));
    REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    return f.get();
  }
  void Send(const std::string& conv, int i) {
    json body = {{"sender_id", "u"}, {"client_msg_id", "m" + std::to_string(i)}, {"payload", "p"}};
    REQUIRE(Call(http::verb::post, "/conversations/" + conv + "/messages", body.dump()).result() ==
            http::status::created);
  }

  // Opens a stream; its head and sink.
  struct Stream {
    ApiRouter::Response head;
    std::shared_ptr<EventSink> sink;
    std::string bytes;
    // Drains the sink until `text` was written (or 10 s pass).
    bool WaitFor(std::string_view text) {
      for (int i = 0; i < 1000; ++i) {
        std::string out;
        if (sink->Take(out) == EventSink::Took::kBytes) {
          sink->Written(out.size());
          bytes += out;
        }
        if (bytes.find(text) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return false;
    }
  };
  Stream Open(std::string target, std::optional<ApiRouter::Response>* refused = nullptr) {
    Stream s;
    std::promise<void> started;
    HttpRequest req;
    req.method = http::verb::get;
    req.method_name = "GET";
    req.target = std::move(target);
    router->Handle(std::move(req), "test",
                   RespondTo(
                       [&](HttpResponse res) {
                         if (refused) *refused = std::move(res);
                         started.set_value();
                       },
                       [&](HttpResponse head, std::shared_ptr<EventSink> sink) {
                         s.head = std::move(head);
                         s.sink = std::move(sink);
                         started.set_value();
                       }));
    started.get_future().wait();
    return s;
  }
};

}  // namespace

TEST_CASE("Event stream through the router: head, replay, live, heartbeat, limits, end") {
  Fixture f(/*max_streams=*/1);
  f.Send("ev", 1);
  Fixture::Stream s = f.Open("/conversations/ev/events?from=1");
  REQUIRE(s.sink);
  CHECK(s.head.result() == http::status::ok);
  CHECK(s.head[http::field::content_type] == "text/event-stream");
  CHECK(s.head[http::field::cache_control] == "no-store");
  CHECK(s.head["X-Accel-Buffering"] == "no");
  REQUIRE(s.WaitFor("id: 1\n"));
  CHECK(s.bytes.starts_with("retry: 3000\n\nid: 1\nevent: message\ndata: {\"seq\":1,"));
  f.Send("ev", 2);
  REQUIRE(s.WaitFor("id: 2\nevent: message\n"));
  f.clock.Advance(std::chrono::seconds(15));
  REQUIRE(s.WaitFor(": hb\n\n"));
  // The one slot is taken: a second stream, and a long-poll, get 429.
  std::optional<ApiRouter::Response> refused;
  Fixture::Stream second = f.Open("/conversations/ev/events", &refused);
  CHECK(!second.sink);
  REQUIRE(refused);
  CHECK(refused->result() == http::status::too_many_requests);
  CHECK(json::parse(refused->body())["error"]["code"] == "resource_exhausted");
  CHECK(f.Call(http::verb::get, "/conversations/ev/messages?from=3&wait_ms=10").result() ==
        http::status::too_many_requests);
  // The connection ends: the slot is free again.
  s.sink->End();
  Fixture::Stream third = f.Open("/conversations/ev/events");
  CHECK(third.sink);
  third.sink->End();
}

TEST_CASE("Long-poll: empty at the deadline, early when a message comes, at once at shutdown") {
  Fixture f;
  auto waiting = f.Start(http::verb::get, "/conversations/lp/messages?from=1&wait_ms=5000");
  CHECK(waiting.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  f.clock.Advance(std::chrono::milliseconds(5000));
  REQUIRE(waiting.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  json page = json::parse(waiting.get().body());
  CHECK(page["messages"].empty());
  CHECK(page["is_end"] == true);

  auto woken = f.Start(http::verb::get, "/conversations/lp/messages?from=1&wait_ms=30000");
  CHECK(woken.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  f.Send("lp", 1);  // no clock moved: the push wakes it
  REQUIRE(woken.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  page = json::parse(woken.get().body());
  REQUIRE(page["messages"].size() == 1);
  CHECK(page["messages"][0]["seq"] == 1);

  auto stopped = f.Start(http::verb::get, "/conversations/lp/messages?from=2&wait_ms=30000");
  CHECK(stopped.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  f.router->StopStreams();
  REQUIRE(stopped.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(stopped.get().result() == http::status::ok);

  for (const char* bad :
       {"wait_ms=30001", "wait_ms=-1", "wait_ms=x", "seqs=1&wait_ms=5", "order=desc&wait_ms=5"}) {
    INFO(bad);
    CHECK(f.Call(http::verb::get, std::string("/conversations/lp/messages?") + bad).result() ==
          http::status::bad_request);
  }
}
