#include "server/http/http_exchange.h"

#include <algorithm>
#include <array>
#include <boost/beast/http/error.hpp>
#include <charconv>

#include "server/http/http_responder.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace http = boost::beast::http;

HttpResponse CloseWithError(http::status status, std::string_view code, std::string_view message) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(false);
  res.body() = std::string(R"({"error":{"code":")") + std::string(code) + R"(","message":")" +
               std::string(message) + R"("}})";
  res.prepare_payload();
  return res;
}

HttpResponse TooMuchUnread() {
  HttpResponse res =
      CloseWithError(http::status::too_many_requests, "resource_exhausted",
                     "too many answers unread by this address: read them, then retry");
  res.set(http::field::retry_after, "1");
  return res;
}

std::optional<HttpResponse> RefuseHeader(const RequestParser& p, const HttpRequest& req,
                                         std::string_view header_bytes) {
  if (p.has_transfer_encoding() &&
      !EqualsNoCase(TrimmedFieldValue(p.transfer_encoding()), "chunked")) {
    return CloseWithError(http::status::bad_request, "bad_request",
                          "only chunked is accepted as Transfer-Encoding");
  }
  // HTTP/1.0 has no Host (health checks such as HAProxy's send none).
  if (!p.has_host() && req.version >= 11) {
    return CloseWithError(http::status::bad_request, "bad_request", "a Host header is required");
  }
  if (p.host_count() > 1) {
    return CloseWithError(http::status::bad_request, "bad_request", "more than one Host header");
  }
  if (p.content_length_values() > 1) {
    return CloseWithError(http::status::bad_request, "bad_request",
                          "more than one Content-Length value");
  }
  // A line of the header that begins with a space or a tab continues the
  // one before (obs-fold): no request needs it.
  for (size_t at = header_bytes.find("\r\n"); at != std::string_view::npos;
       at = header_bytes.find("\r\n", at + 2)) {
    if (at + 2 < header_bytes.size() &&
        (header_bytes[at + 2] == ' ' || header_bytes[at + 2] == '\t')) {
      return CloseWithError(http::status::bad_request, "bad_request",
                            "a header line continued on the next (obs-fold) is not accepted");
    }
  }
  return std::nullopt;
}

std::optional<ReadErrorAnswer> AnswerToReadError(boost::system::error_code ec) {
  const std::string_view bad_request = ProtocolErrorFor(ProtocolError::kBadRequest).metric_label;
  if (ec == http::error::header_limit) {
    return ReadErrorAnswer{
        CloseWithError(http::status::request_header_fields_too_large,
                       "request_header_fields_too_large", "request header is too large"),
        bad_request};
  }
  if (ec == http::error::body_limit) {
    const std::string_view code = ProtocolErrorFor(ProtocolError::kPayloadTooLarge).metric_label;
    return ReadErrorAnswer{
        CloseWithError(http::status::payload_too_large, code, "request body is too large"), code};
  }
  if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
      ec != http::error::partial_message) {
    return ReadErrorAnswer{
        CloseWithError(http::status::bad_request, "bad_request", "malformed HTTP request"),
        bad_request};
  }
  return std::nullopt;
}

void SerializeResponse(const HttpResponse& res, bool head, std::string& out) {
  const unsigned version = res.version();
  const unsigned code = res.result_int();
  char line[13] = {'H',
                   'T',
                   'T',
                   'P',
                   '/',
                   static_cast<char>('0' + version / 10),
                   '.',
                   static_cast<char>('0' + version % 10),
                   ' ',
                   static_cast<char>('0' + code / 100),
                   static_cast<char>('0' + (code / 10) % 10),
                   static_cast<char>('0' + code % 10),
                   ' '};
  out.append(line, sizeof line);
  const boost::beast::string_view reason =
      res.reason().empty() ? http::obsolete_reason(res.result()) : res.reason();
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& field : res) {
    const boost::beast::string_view name = field.name_string();
    const boost::beast::string_view value = field.value();
    out.append(name.data(), name.size());
    out += ": ";
    out.append(value.data(), value.size());
    out += "\r\n";
  }
  out += "\r\n";
  if (!head) out += res.body();
}

namespace {

// "Seqd-Placement-Version: N\r\n" for `version` >= 0: formatted once per
// version on each thread (the version changes with moves, not requests).
std::string_view PlacementVersionLine(int64_t version) {
  thread_local int64_t formatted = -1;
  thread_local std::array<char, 64> line;
  thread_local size_t size = 0;
  if (version != formatted) {
    char* end =
        std::copy(kPlacementVersionField.begin(), kPlacementVersionField.end(), line.data());
    *end++ = ':';
    *end++ = ' ';
    end = std::to_chars(end, line.data() + line.size() - 2, version).ptr;
    *end++ = '\r';
    *end++ = '\n';
    size = static_cast<size_t>(end - line.data());
    formatted = version;
  }
  return {line.data(), size};
}

}  // namespace

void AppendOkHeader(std::string_view content_type, size_t body_size, std::string_view request_id,
                    int64_t placement_version, std::string& out) {
  out += "HTTP/1.1 200 OK\r\nContent-Type: ";
  out += content_type;
  out += "\r\nCache-Control: no-store\r\n";
  if (!request_id.empty()) {
    out += "X-Request-Id: ";
    out += request_id;
    out += "\r\n";
  }
  if (placement_version >= 0) out += PlacementVersionLine(placement_version);
  out += "Content-Length: ";
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, body_size).ptr;
  out.append(digits, end);
  out += "\r\n\r\n";
}

}  // namespace seqd
