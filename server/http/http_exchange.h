// What an HTTP connection (http_session.cc) adds between the bytes and
// ApiRouter: the checks of a request's header made before its body is read,
// the answers the connection gives itself, and a response's bytes.
//
// Thread safety: pure functions.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/http_request.h"
#include "server/http/http_responder.h"
#include "server/http/request_parser.h"

namespace seqd {

// An error answer that closes the connection:
// {"error":{"code":"<code>","message":"<message>"}}. Fixed texts only
// (nothing is escaped).
HttpResponse CloseWithError(boost::beast::http::status status, std::string_view code,
                            std::string_view message);

// 429 (Retry-After: 1) to a request from an address whose connections have
// too many answers unread (HttpOptions::max_unread_bytes_per_peer).
HttpResponse TooMuchUnread();

// The answer to a header that must not be served (docs/security.md), or
// nullopt:
//  - Transfer-Encoding other than exactly "chunked": a body framed in a way
//    we do not read could be taken for a second request (smuggling);
//  - HTTP/1.1 without Host (HTTP/1.0 needs none), or more than one Host
//    (RFC 9112 3.2: 400);
//  - obs-fold (a header line continued on the next, RFC 9112 5.2): refused
//    rather than joined with a space, so no proxy in front can read the
//    field differently from us.
// The CSRF rule needs the route, so ApiRouter checks it
// (RefusedAsCrossSite in http_request.h).
// `p` has parsed the header; `req` is what it parsed into; `header_bytes`
// is the header as read (request line to the blank line).
std::optional<HttpResponse> RefuseHeader(const RequestParser& p, const HttpRequest& req,
                                         std::string_view header_bytes);

// What the connection answers to a request it could not read (`ec` from
// the parser or the read, not end_of_stream), and the metrics status label
// it counts that answer under: 431 over the header limit, 413 over the body
// limit, 400 for malformed HTTP. nullopt when the connection just ends (a
// timeout, a reset, a truncated request).
struct ReadErrorAnswer {
  HttpResponse response;
  std::string_view metric_label;
};
std::optional<ReadErrorAnswer> AnswerToReadError(boost::system::error_code ec);

// Appends to `out` the bytes Beast's serializer would write for `res` (a
// non-chunked answer): status line, the fields in order, a blank line, then
// the body unless `head`.
void SerializeResponse(const HttpResponse& res, bool head, std::string& out);

// Appends to `out` the head of what HttpResponder::ToResponse() makes of a
// 200 HTTP/1.1 keep-alive answer, as SerializeResponse() writes it: no
// Connection field. `placement_version` < 0: no Seqd-Placement-Version.
void AppendOkHeader(std::string_view content_type, size_t body_size, std::string_view request_id,
                    int64_t placement_version, std::string& out);

}  // namespace seqd
