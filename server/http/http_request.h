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
  std::string last_event_id;  // the first Last-Event-ID field's value; "" if none
  std::string body;

  // Empties every field; the strings keep their storage.
  void Clear();
};

// The parts of `req` ApiRouter reads.
HttpRequest FromBeast(const boost::beast::http::request<boost::beast::http::string_body>& req);

// True if a request of `version` whose first Connection field is
// `connection` ("" if none) keeps the connection open, as Beast's
// message::keep_alive() decides it.
bool KeepAlive(unsigned version, std::string_view connection);

}  // namespace seqd
