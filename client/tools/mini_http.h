// A minimal HTTP/1.1 client for seqctl and seqbench: request building, an
// incremental response parser (Content-Length and chunked bodies), and a
// blocking one-shot request (plain or TLS). Not a general HTTP client: no
// redirects. Also the tools' shared TLS flags.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seqd::client {
struct ClientOptions;
}

namespace seqd::tools {

// The tools' TLS settings: --tls, --tls-ca FILE, --tls-server-name NAME,
// --tls-cert FILE, --tls-key FILE (any --tls-* flag implies --tls). With TLS
// on, the environment fills what the flags left empty: SEQD_TLS_CA,
// SEQD_TLS_SERVER_NAME, SEQD_TLS_CERT, SEQD_TLS_KEY.
struct TlsFlags {
  bool enabled = false;
  std::string ca_file;      // "" = the system's default CAs
  std::string server_name;  // "" = the host of the address given
  std::string cert_file;    // client certificate (mTLS), with key_file
  std::string key_file;

  // If `flag` is one of the TLS flags, takes it (calling `value()` for its
  // argument) and returns true.
  bool Parse(const std::string& flag, const std::function<std::string()>& value);
  // Fills empty fields from the environment (only when enabled).
  void ApplyEnvironment();
  // Copies the settings into the client library's options.
  void ApplyTo(client::ClientOptions& options) const;
};

// The help text of the TLS flags, for the tools' usage.
extern const char* const kTlsFlagsHelp;

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

// One request on a fresh connection, over TLS if tls.enabled (the server
// verified: CA, then its name); nullopt (and `error`) on I/O failure, a
// refused certificate or a timeout.
std::optional<HttpResponse> HttpCall(const std::string& host, const std::string& port,
                                     std::string_view method, std::string_view target,
                                     std::string_view body, std::chrono::milliseconds timeout,
                                     std::string& error, std::string_view token = {},
                                     const TlsFlags& tls = {});

// Percent-encodes a path segment or query value.
std::string UrlEncode(std::string_view s);

}  // namespace seqd::tools
