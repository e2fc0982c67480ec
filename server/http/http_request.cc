#include "server/http/http_request.h"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>

namespace seqd {

namespace http = boost::beast::http;

void HttpRequest::Clear() {
  method = http::verb::unknown;
  method_name.clear();
  target.clear();
  version = 11;
  keep_alive = true;
  authorization.clear();
  accept.clear();
  last_event_id.clear();
  body.clear();
}

bool KeepAlive(unsigned version, std::string_view connection) {
  http::token_list tokens(boost::beast::string_view(connection.data(), connection.size()));
  if (version < 11) return tokens.exists("keep-alive");
  return !tokens.exists("close");
}

HttpRequest FromBeast(const http::request<http::string_body>& req) {
  auto first = [&](http::field f) -> std::string {
    auto it = req.find(f);
    if (it == req.end()) return {};
    return std::string(it->value());
  };
  HttpRequest out;
  out.method = req.method();
  out.method_name = std::string(req.method_string());
  out.target = std::string(req.target());
  out.version = req.version();
  out.keep_alive = req.keep_alive();
  out.authorization = first(http::field::authorization);
  out.accept = first(http::field::accept);
  if (auto it = req.find("Last-Event-ID"); it != req.end())
    out.last_event_id = std::string(it->value());
  out.body = req.body();
  return out;
}

}  // namespace seqd
