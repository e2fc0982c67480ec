// RequestParser against Beast's http::request_parser: the same bytes give
// the same HttpRequest (FromBeast of Beast's message) and the same errors,
// and one connection's storage serves request after request.
#include "server/http/request_parser.h"

#include <doctest/doctest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/http_request.h"

using namespace seqd;
namespace http = boost::beast::http;

namespace {

struct Parsed {
  boost::beast::error_code ec;
  HttpRequest req;
  size_t used = 0;
};

// Feeds `bytes` whole, header then (eagerly) body, as HttpServer does.
template <typename Parser>
void Feed(Parser& p, std::string_view bytes, Parsed& out) {
  p.header_limit(8192);
  p.body_limit(65536);
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const size_t n = p.put(boost::asio::buffer(rest.data(), rest.size()), out.ec);
    rest.remove_prefix(n);
    out.used += n;
    if (out.ec) return;
    if (p.is_header_done()) p.eager(true);
    if (p.is_done()) return;
    if (n == 0) break;
  }
  if (!p.is_done() && !out.ec) out.ec = http::error::need_more;
}

Parsed WithBeast(std::string_view bytes) {
  Parsed out;
  http::request_parser<http::string_body> p;
  Feed(p, bytes, out);
  if (!out.ec) out.req = FromBeast(p.get());
  return out;
}

Parsed WithOurs(std::string_view bytes, HttpRequest& storage, std::string& scratch) {
  Parsed out;
  std::optional<RequestParser> p;
  p.emplace(storage, scratch);
  Feed(*p, bytes, out);
  if (!out.ec) out.req = storage;
  return out;
}

void CheckSame(std::string_view bytes) {
  CAPTURE(bytes);
  HttpRequest storage;
  std::string scratch;
  const Parsed a = WithBeast(bytes);
  // Twice through the same storage: what the first left must not show.
  for (int round = 0; round < 2; ++round) {
    const Parsed b = WithOurs(bytes, storage, scratch);
    CHECK(a.ec == b.ec);
    CHECK(a.used == b.used);
    if (a.ec || b.ec) continue;
    CHECK(a.req.method == b.req.method);
    CHECK(a.req.method_name == b.req.method_name);
    CHECK(a.req.target == b.req.target);
    CHECK(a.req.version == b.req.version);
    CHECK(a.req.keep_alive == b.req.keep_alive);
    CHECK(a.req.authorization == b.req.authorization);
    CHECK(a.req.accept == b.req.accept);
    CHECK(a.req.x_request_id == b.req.x_request_id);
    CHECK(a.req.traceparent == b.req.traceparent);
    CHECK(a.req.body == b.req.body);
  }
}

}  // namespace

TEST_CASE("RequestParser reads what Beast's request_parser reads") {
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\n\r\n");
  CheckSame("GET /api/segment/get/k?count=100 HTTP/1.1\r\nHost: x\r\n\r\n");
  CheckSame("HEAD /seq/k HTTP/1.0\r\nHost: x\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\nConnection: foo\r\nConnection: close\r\n\r\n");
  CheckSame("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer  abc \r\nAuthorization: b\r\n\r\n");
  CheckSame("GET / HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\nAccept: application/json\r\n\r\n");
  CheckSame("GET / HTTP/1.1\r\nHost: x\r\nAccept: text/plain,\r\n  application/json\r\n\r\n");
  // The request's ids: the first of each, by name in any case; look-alikes
  // of the same length are not taken.
  CheckSame(
      "GET / HTTP/1.1\r\nHost: x\r\nX-Request-Ix: no\r\nx-REQUEST-id: r1\r\n"
      "X-Request-Id: r2\r\ntraceparentx: no\r\nTraceParent: 00-a-b-01\r\n"
      "traceparent: second\r\nTracepar3nt: no\r\n\r\n");
  CheckSame("GET / HTTP/1.1\r\nHost: x\r\nX-Request-Id:\r\nX-Request-Id: later\r\n\r\n");
  CheckSame("FROB /x HTTP/1.1\r\nHost: x\r\n\r\n");
  CheckSame("POST /admin/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}");
  CheckSame(
      "POST /m HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\n\r\nGET /seq/j HTTP/1.1\r\n\r\n");  // pipelined
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\n");                                 // incomplete
  CheckSame("GARBAGE\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
  CheckSame("GET /seq/k HTTP/1.1\r\nHost: x\r\nX: " + std::string(9000, 'a') + "\r\n\r\n");
  CheckSame("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
}

TEST_CASE("RequestParser keeps the header fields HttpServer checks") {
  HttpRequest req;
  std::string scratch;
  RequestParser p(req, scratch);
  boost::beast::error_code ec;
  const std::string_view bytes =
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Type:  application/json \r\n"
      "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n";
  p.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  REQUIRE(!ec);
  REQUIRE(p.is_header_done());
  CHECK(p.has_host());
  CHECK(p.has_transfer_encoding());
  CHECK(p.transfer_encoding() == "chunked");
  CHECK(p.content_type() == "application/json");

  HttpRequest req2;
  RequestParser q(req2, scratch);
  const std::string_view bare = "GET /x HTTP/1.1\r\n\r\n";
  q.put(boost::asio::buffer(bare.data(), bare.size()), ec);
  REQUIRE(!ec);
  CHECK(!q.has_host());
  CHECK(!q.has_transfer_encoding());
  CHECK(q.content_type().empty());
}
