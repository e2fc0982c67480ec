// seqd::tools::ParseHttpResponse (client/tools/mini_http.h), the tools'
// response parser over Boost.Beast: the status line, lower-cased headers,
// Content-Length and chunked bodies, pipelined responses, input cut at any
// byte, bodies delimited by the close, and the errors.
#include "mini_http.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using seqd::tools::HttpParse;
using seqd::tools::HttpResponse;
using seqd::tools::ParseHttpResponse;

namespace {

struct Parsed {
  HttpParse state;
  HttpResponse response;
  size_t consumed = 0;
  std::string error;
};

Parsed Parse(std::string_view input) {
  Parsed p;
  p.state = ParseHttpResponse(input, p.response, p.consumed, p.error);
  return p;
}

// Every proper prefix of `input` needs more.
void CheckNeedsMoreUntilTheEnd(std::string_view input, size_t end) {
  for (size_t len = 0; len < end; ++len) {
    INFO("prefix of " << len << " bytes");
    CHECK(Parse(input.substr(0, len)).state == HttpParse::kNeedMore);
  }
}

}  // namespace

TEST_CASE("mini_http: a Content-Length response, its status line and headers") {
  const std::string in =
      "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Extra:  two words  \r\n"
      "Content-Length: 7\r\n\r\n{\"a\":1}";
  CheckNeedsMoreUntilTheEnd(in, in.size());
  const Parsed p = Parse(in);
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.consumed == in.size());
  CHECK(p.response.status == 201);
  CHECK(p.response.reason == "Created");
  CHECK(p.response.body == "{\"a\":1}");
  CHECK(p.response.keep_alive);
  REQUIRE(p.response.Header("content-type") != nullptr);
  CHECK(*p.response.Header("content-type") == "application/json");
  REQUIRE(p.response.Header("x-extra") != nullptr);
  CHECK(*p.response.Header("x-extra") == "two words");
  CHECK(p.response.Header("Content-Type") == nullptr);  // names are lower-cased
  CHECK(p.response.Header("absent") == nullptr);
}

TEST_CASE("mini_http: pipelined responses are taken one at a time") {
  const std::string first = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  const std::string second = "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
  const std::string in = first + second;
  Parsed p = Parse(in);
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.consumed == first.size());
  CHECK(p.response.body == "hello");
  p = Parse(std::string_view(in).substr(p.consumed));
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.consumed == second.size());
  CHECK(p.response.status == 404);
  CHECK(p.response.body == "no");
}

TEST_CASE("mini_http: chunked bodies, with extensions and trailers") {
  const std::string in =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  CheckNeedsMoreUntilTheEnd(in, in.size());
  const Parsed p = Parse(in + "HTTP/1.1 200 OK\r\n");
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.consumed == in.size());
  CHECK(p.response.body == "hello world");
  CHECK(p.response.keep_alive);
}

TEST_CASE("mini_http: 204 and 304 have no body") {
  for (const char* in : {"HTTP/1.1 204 No Content\r\nServer: x\r\n\r\n",
                         "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"}) {
    const Parsed p = Parse(in);
    REQUIRE(p.state == HttpParse::kDone);
    CHECK(p.consumed == std::string_view(in).size());
    CHECK(p.response.body.empty());
  }
}

TEST_CASE("mini_http: keep-alive as HTTP/1.0 and 1.1 say") {
  Parsed p = Parse("HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(!p.response.keep_alive);
  p = Parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(!p.response.keep_alive);
  p = Parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.response.keep_alive);
}

TEST_CASE("mini_http: a body delimited by the close waits for it, its head known") {
  for (const char* in : {"HTTP/1.0 200 ok\r\nContent-Type: text/plain\r\n\r\nuntil close",
                         "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close"}) {
    const Parsed p = Parse(in);
    CHECK(p.state == HttpParse::kNeedMore);
    CHECK(p.response.status == 200);
    CHECK(!p.response.keep_alive);
  }
  // Without a length a keep-alive connection could never tell where it ends.
  const Parsed p = Parse("HTTP/1.1 200 OK\r\nX: y\r\n\r\nabc");
  CHECK(p.state == HttpParse::kError);
  CHECK(p.error == "response without Content-Length on a keep-alive connection");
}

TEST_CASE("mini_http: malformed responses are errors") {
  for (const char* in :
       {"HTTX/1.1 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    INFO(in);
    const Parsed p = Parse(in);
    CHECK(p.state == HttpParse::kError);
    CHECK(!p.error.empty());
  }
  // A head that never ends is cut off at 64 KiB.
  const Parsed p = Parse("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a'));
  CHECK(p.state == HttpParse::kError);
}

TEST_CASE("mini_http: a large Content-Length body") {
  const std::string body(9 << 20, 'b');  // above Beast's default limit, 8 MiB
  const std::string in =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  CHECK(Parse(std::string_view(in).substr(0, in.size() - 1)).state == HttpParse::kNeedMore);
  const Parsed p = Parse(in);
  REQUIRE(p.state == HttpParse::kDone);
  CHECK(p.response.body == body);
}
