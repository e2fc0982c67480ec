// A minimal HTTP/1.1 client for seqctl and seqbench: request building, an
// incremental response parser (Content-Length and chunked bodies), and a
// blocking one-shot request. Not a general HTTP client: no redirects, no TLS.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seqd::tools {

struct HttpResponse {
  int status = 0;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool keep_alive = true;
  // The value of a header (name lower-case), or nullptr.
  const std::string* Header(std::string_view name) const;
};

enum class HttpParse { kDone, kNeedMore, kError };

// Parses the first response in `input`. On kDone, `out` holds it and
// `consumed` its size; on kError, `error` says why.
HttpParse ParseHttpResponse(std::string_view input, HttpResponse& out, size_t& consumed,
                            std::string& error);

// "GET /x HTTP/1.1" with Host, keep-alive, a body when not empty, and
// `Authorization: Bearer <token>` when `token` is not empty.
std::string BuildHttpRequest(std::string_view method, std::string_view target,
                             std::string_view host, std::string_view body = {},
                             std::string_view content_type = "application/json",
                             std::string_view token = {});

// One request on a fresh connection; nullopt (and `error`) on I/O failure or timeout.
std::optional<HttpResponse> HttpCall(const std::string& host, const std::string& port,
                                     std::string_view method, std::string_view target,
                                     std::string_view body, std::chrono::milliseconds timeout,
                                     std::string& error, std::string_view token = {});

// Percent-encodes a path segment or query value.
std::string UrlEncode(std::string_view s);

}  // namespace seqd::tools
