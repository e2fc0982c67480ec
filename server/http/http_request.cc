#include "server/http/http_request.h"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cctype>

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
  x_request_id.clear();
  traceparent.clear();
  content_type.clear();
  has_origin = false;
  last_event_id.clear();
  body.clear();
}

std::string_view TrimmedFieldValue(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool RefusedAsCrossSite(const HttpRequest& req) {
  const http::verb m = req.method;
  if (m != http::verb::post && m != http::verb::put && m != http::verb::patch) return false;
  const std::string_view auth = TrimmedFieldValue(req.authorization);
  if (auth.size() > 7 && EqualsNoCase(auth.substr(0, 7), "bearer ")) return false;
  std::string_view type = req.content_type;
  type = TrimmedFieldValue(type.substr(0, type.find(';')));
  if (EqualsNoCase(type, "application/json")) return false;
  const bool bare = req.body.empty() && req.content_type.empty() && !req.has_origin;
  return !bare;
}

bool KeepAlive(unsigned version, std::string_view connection) {
  http::token_list tokens(boost::beast::string_view(connection.data(), connection.size()));
  if (version < 11) return tokens.exists("keep-alive");
  return !tokens.exists("close");
}

HttpRequest FromBeast(const http::request<http::string_body>& req) {
  auto first = [&](auto f) -> std::string {
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
  out.x_request_id = first("x-request-id");
  out.traceparent = first("traceparent");
  out.content_type = first(http::field::content_type);
  out.has_origin = req.find(http::field::origin) != req.end();
  if (auto it = req.find("Last-Event-ID"); it != req.end())
    out.last_event_id = std::string(it->value());
  out.body = req.body();
  return out;
}

}  // namespace seqd
