// Request ids: what an incoming X-Request-Id and traceparent must look like
// to be honoured (injection attempts refused), and generated ids unique
// across threads and across generators (processes).
#include "server/base/request_id.h"

#include <doctest/doctest.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/http/request_ids.h"

namespace seqd {

TEST_CASE("request id: X-Request-Id is honoured only as 1..128 of [A-Za-z0-9._:-]") {
  for (const std::string& good :
       std::vector<std::string>{"a", "abc-123", "A.b_c:d-E", "0123456789abcdef-1f",
                                "550e8400-e29b-41d4-a716-446655440000", std::string(128, 'z')}) {
    INFO(good);
    auto id = RequestId::FromHeader(good);
    REQUIRE(id);
    CHECK(id->view() == good);
  }
  for (const std::string& bad : std::vector<std::string>{
           std::string(), std::string(129, 'z'), std::string("a b"), std::string("a\nb"),
           std::string("a\r\nX-Injected: 1"), std::string("a\"b"), std::string("a\\b"),
           std::string("a,b"), std::string("a;b"), std::string("a/b"), std::string("caf\xC3\xA9"),
           std::string("a\0b", 3), std::string("{\"x\":1}"), std::string("a\tb")}) {
    INFO(bad);
    CHECK_FALSE(RequestId::FromHeader(bad));
  }
}

TEST_CASE("request id: traceparent is honoured only in the W3C format") {
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string good = "00-" + trace + "-00f067aa0ba902b7-01";
  auto t = TraceId::FromTraceparent(good);
  REQUIRE(t);
  CHECK(t->view() == trace);
  // A later version may carry more after the 55 characters, after a dash.
  CHECK(TraceId::FromTraceparent("01-" + trace + "-00f067aa0ba902b7-01-what-ever"));
  CHECK(TraceId().view().empty());

  for (const std::string& bad : std::vector<std::string>{
           std::string(),
           "00-" + trace + "-00f067aa0ba902b7-01-extra",  // version 00 is exactly 55
           "01-" + trace + "-00f067aa0ba902b7-01extra",
           "ff-" + trace + "-00f067aa0ba902b7-01",                     // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
           "00-" + trace + "-0000000000000000-01",                     // zero parent id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
           "00-" + trace.substr(1) + "-00f067aa0ba902b7-01",           // short trace id
           "00-" + trace + "-00f067aa0ba902b-01",                      // short parent id
           "00-" + trace + "-00f067aa0ba902b7-1",                      // short flags
           "00_" + trace + "-00f067aa0ba902b7-01",                     // separator
           "00-" + trace.substr(0, 31) + "g-00f067aa0ba902b7-01",      // not hex
           "00-" + trace + "-00f067aa0ba902b7-01\n",                   // a newline
           "00-" + trace.substr(0, 31) + "\"-00f067aa0ba902b7-01",     // a quote
           "0-" + trace + "-00f067aa0ba902b7-01",
       }) {
    INFO(bad);
    CHECK_FALSE(TraceId::FromTraceparent(bad));
  }
}

TEST_CASE("request id: generated ids are valid ids, unique across threads") {
  RequestIdGenerator gen(0x0123456789abcdefULL);
  CHECK(gen.prefix() == "0123456789abcdef");
  const RequestId first = gen.Next();
  CHECK(first.view().starts_with("0123456789abcdef-"));
  CHECK(RequestId::FromHeader(first.view()));  // what we make, we would accept

  std::mutex mu;
  std::set<std::string> seen;
  std::vector<std::thread> threads;
  constexpr int kThreads = 4, kEach = 5000;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < kEach; ++i) mine.emplace_back(gen.Next().view());
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  seen.insert(std::string(first.view()));
  CHECK(seen.size() == kThreads * kEach + 1);
}

TEST_CASE("request id: two generators (two processes) differ by their random prefix") {
  RequestIdGenerator a, b;
  CHECK(a.prefix() != b.prefix());
  const RequestId x = a.Next(), y = b.Next();
  CHECK(x.view() != y.view());
  CHECK(x.view().substr(0, 16) == a.prefix());
  CHECK(y.view().substr(0, 16) == b.prefix());
  // One thread alternating between generators keeps each one's ids unique.
  std::set<std::string> from_a;
  for (int i = 0; i < 3000; ++i) {
    from_a.emplace(a.Next().view());
    b.Next();
  }
  CHECK(from_a.size() == 3000);
}

TEST_CASE("request id: an HTTP request's ids from its header fields") {
  HttpRequest req;
  RequestIds ids = RequestIdsOf(req);
  CHECK(ids.request.view().size() > 17);  // made here
  CHECK(ids.trace.empty());

  req.x_request_id = "client-7";
  req.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  ids = RequestIdsOf(req);
  CHECK(ids.request.view() == "client-7");
  CHECK(ids.trace.view() == "4bf92f3577b34da6a3ce929d0e0e4736");

  req.x_request_id = "bad id\r\nX-Evil: 1";
  req.traceparent = "garbage";
  ids = RequestIdsOf(req);
  CHECK(ids.request.view() != req.x_request_id);
  CHECK(RequestId::FromHeader(ids.request.view()));
  CHECK(ids.trace.empty());
}

TEST_CASE("request id: stamped on an answer, and into an error object") {
  HttpResponse ok{boost::beast::http::status::ok, 11};
  ok.body() = R"({"error":{"code":"x"}})";  // a 200 is never an error answer
  StampRequestId(ok, "r-1");
  CHECK(ok["X-Request-Id"] == "r-1");
  CHECK(ok.body() == R"({"error":{"code":"x"}})");

  HttpResponse err{boost::beast::http::status::not_found, 11};
  err.body() = R"({"error":{"code":"not_found","message":"no \"request_id\": here"}})";
  err.prepare_payload();
  StampRequestId(err, "r-2");
  CHECK(err["X-Request-Id"] == "r-2");
  CHECK(err.body() ==
        R"({"error":{"code":"not_found","message":"no \"request_id\": here","request_id":"r-2"}})");
  CHECK(err[boost::beast::http::field::content_length] == std::to_string(err.body().size()));

  HttpResponse text{boost::beast::http::status::bad_request, 11};
  text.body() = "not json";
  StampRequestId(text, "r-3");
  CHECK(text.body() == "not json");
  CHECK(text["X-Request-Id"] == "r-3");
}

}  // namespace seqd
