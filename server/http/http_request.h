// A request as ApiRouter reads it: the request line, the few header fields
// the routes look at, and the body. HttpServer's parser fills one per
// connection (server/http/request_parser.h) and reuses its storage;
// FromBeast() converts a Beast message (tests, the fuzzer).
//
// Thread safety: a value.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <string>
#include <string_view>

namespace seqd {

struct HttpRequest {
  boost::beast::http::verb method = boost::beast::http::verb::unknown;
  std::string method_name;  // as sent (what Beast's method_string() gives)
  std::string target;
  unsigned version = 11;  // 10: HTTP/1.0, 11: HTTP/1.1
  // As Beast's message::keep_alive() reads it: by the version and the
  // first Connection field.
  bool keep_alive = true;
  std::string authorization;  // the first Authorization field's value; "" if none
  std::string accept;         // the first Accept field's value; "" if none
  // The first X-Request-Id and traceparent values as sent ("" if none);
  // checked by ApiRouter (server/base/request_id.h).
  std::string x_request_id;
  std::string traceparent;
  std::string content_type;   // the first Content-Type field's value; "" if none
  bool has_origin = false;    // an Origin field was sent (a browser's page)
  std::string last_event_id;  // the first Last-Event-ID field's value; "" if none
  std::string body;

  // Empties every field; the strings keep their storage.
  void Clear();
};

// The parts of `req` ApiRouter reads.
HttpRequest FromBeast(const boost::beast::http::request<boost::beast::http::string_body>& req);

// `value` (a header field's value) without the spaces and tabs around it.
std::string_view TrimmedFieldValue(std::string_view value);
// True if `a` and `b` are equal but for ASCII case (header values such as
// "chunked" or "Bearer").
bool EqualsNoCase(std::string_view a, std::string_view b);

// The CSRF rule (docs/security.md): true if `req` must not be acted on
// because a page on another site could have made a browser send it without
// asking first (a CORS "simple" request). That is a POST, PUT or PATCH
// without a bearer token, unless it says Content-Type: application/json
// (which a browser sends cross-site only after a preflight seqd never
// grants) or is bare: no body, no Content-Type and no Origin (every
// browser sends Origin with a cross-origin POST). Checked by the router
// once the route is known to take the method (404 and 405 first): 415.
bool RefusedAsCrossSite(const HttpRequest& req);
// The message of that 415.
inline constexpr std::string_view kCrossSiteRefusal =
    "send the body as Content-Type: application/json (or send a bearer token)";

// True if a request of `version` whose first Connection field is
// `connection` ("" if none) keeps the connection open, as Beast's
// message::keep_alive() decides it.
bool KeepAlive(unsigned version, std::string_view connection);

}  // namespace seqd
