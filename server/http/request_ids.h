// The ids of an HTTP request (server/base/request_id.h) from its header
// fields, and where an answer carries them (docs/http-api.md, "Request
// ids"): the X-Request-Id header of every answer, and "request_id" in the
// error object of an error answer.
//
// Thread safety: pure functions (RequestIdsOf draws from the process's
// generator, which is thread safe).
#pragma once

#include <string_view>

#include "server/base/request_id.h"
#include "server/http/http_request.h"
#include "server/http/http_responder.h"

namespace seqd {

// The client's X-Request-Id if it is acceptable (RequestId::FromHeader),
// else a new one; the trace id of its traceparent if that is valid.
RequestIds RequestIdsOf(const HttpRequest& req);

// Sets X-Request-Id: `id` on `res`; if `res` is an error answer whose body
// is an error object ({"error":{...}}) without a request_id, adds
// "request_id":`id` to that object. REQUIRES: `id` is a RequestId's text.
void StampRequestId(HttpResponse& res, std::string_view id);

}  // namespace seqd
