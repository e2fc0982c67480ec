// One HTTP request in flight through ApiRouter, and the helpers its route
// files share (api_router.cc, id_routes.cc, key_routes.cc). Internal to
// server/http.
//
// Thread safety: a Call is shared by the callbacks that may complete it;
// Finish() sends at most once (atomic), the rest is set before the call is
// handed to a service.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <cctype>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/auth/access.h"
#include "server/base/log.h"
#include "server/base/log_throttle.h"
#include "server/base/request_id.h"
#include "server/http/api_router.h"
#include "server/http/http_ops.h"
#include "server/http/http_responder.h"
#include "server/http/http_util.h"
#include "server/http/request_ids.h"
#include "server/service/placement_api.h"
#include "server/service/request_metrics.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace http = boost::beast::http;
using Json = nlohmann::ordered_json;

inline constexpr std::string_view kJsonType = "application/json";
inline constexpr std::string_view kTextType = "text/plain";
// Rows of /admin/keys without ?limit=, and on the status page.
inline constexpr size_t kDefaultListLimit = 100;

inline std::string_view ToStd(boost::beast::string_view s) { return {s.data(), s.size()}; }
inline boost::beast::string_view ToBeast(std::string_view s) { return {s.data(), s.size()}; }

inline std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The secret of an `Authorization: Bearer <secret>` header; "" if none.
std::string_view BearerSecret(const HttpRequest& req);

// True if the request's Accept header asks for text/plain and not JSON.
bool PrefersText(const HttpRequest& req);
// The op of a request (server/http/http_ops.h), from its method and split
// path (HEAD given as GET).
HttpOp RequestOp(boost::beast::http::verb method, std::string_view path, PathSegments seg);

struct ApiRouter::Call {
  HttpRequest req;
  std::shared_ptr<HttpResponder> responder;  // until the answer is sent
  std::string_view path;                     // into req.target
  std::string_view query;
  std::atomic<bool> responded{false};
  // GET /seq and the Leaf endpoint: what the answer looks like.
  std::string key;
  bool seq_batch = false;  // ?count= given: answer with ranges
  bool seq_text = false;   // Accept: text/plain
  bool seq_leaf = false;   // Leaf's bare-ID text endpoint
  bool seq_block = false;  // ?contiguous=true: one range, {"first","last"}
  RequestMetrics* metrics = nullptr;
  std::chrono::steady_clock::time_point started;
  // X-Request-Id (given or made) and traceparent's trace id: on the
  // answer, in its error body and in the request's log and audit lines.
  RequestIds ids;
  // The metrics labels: `op` set by the router when it matches the path;
  // `status_label` by whatever builds an error answer (empty: derived from
  // the HTTP status).
  std::string_view op = "other";
  std::optional<Access> access;  // set by the router before any route runs
  // Store groups: its version goes on every answer (Seqd-Placement-Version);
  // null without them.
  const PlacementApi* placement = nullptr;
  mutable std::string_view status_label;
  // This call, held by itself while a service holds a callback that
  // points to it without owning it (HandleSeq): such a callback can stay
  // small enough for std::function to keep without allocating. Released by
  // that callback, which the service runs exactly once.
  std::shared_ptr<Call> self;

  ApiRouter::Response Make(http::status status, std::string_view type, std::string body) const {
    Response res{status, req.version};
    res.set(http::field::content_type, ToBeast(type));
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(req.keep_alive);
    res.body() = std::move(body);
    return res;
  }
  ApiRouter::Response JsonResponse(http::status status, const seqd::Json& j) const {
    return Make(status, kJsonType, Dump(j));
  }
  ApiRouter::Response ErrorJson(http::status status, std::string_view code,
                                std::string message) const {
    status_label = code;
    seqd::Json j;
    j["error"]["code"] = code;
    j["error"]["message"] = std::move(message);
    j["error"]["request_id"] = ids.request.view();
    return JsonResponse(status, j);
  }
  ApiRouter::Response ErrorJson(const Error& error) const {
    ApiRouter::Response res =
        ErrorJson(HttpStatusFor(error.code), ErrorCodeName(error.code), PublicMessage(error));
    status_label = WireErrorFor(error.code).metric_label;
    return res;
  }
  // An error as bare text (Leaf's endpoints).
  ApiRouter::Response ErrorText(const Error& error) const {
    status_label = WireErrorFor(error.code).metric_label;
    return Make(HttpStatusFor(error.code), kTextType, PublicMessage(error));
  }

  // True if the request's token may do `what` (its permission in the op
  // table, server/http/http_ops.h) on `key`; else answers 401 or 403 (as
  // text for Leaf's text endpoints) and returns false.
  bool Permit(HttpOp what, std::string_view key = {}, bool text = false) {
    const HttpOpRow& row = HttpOpFor(what);
    if (!row.permission) return true;
    Status s = access->Check(*row.permission, key, op);
    if (s) return true;
    Finish(text ? ErrorText(s.error()) : ErrorJson(s.error()));
    return false;
  }

  // For a route that takes the request's method (404 and 405 are decided):
  // true if the CSRF rule (RefusedAsCrossSite, http_request.h) lets the
  // request on; else answers 415 and returns false.
  bool PassesCrossSiteRule() {
    if (!RefusedAsCrossSite(req)) return true;
    Finish(ErrorJson(http::status::unsupported_media_type,
                     ProtocolErrorFor(ProtocolError::kUnsupportedMediaType).metric_label,
                     std::string(kCrossSiteRefusal)));
    return false;
  }

  // Sends `res` unless a response already went out. Never throws.
  void Finish(Response res) {
    if (responded.exchange(true)) return;
    if (req.method == http::verb::options && res.result() == http::status::method_not_allowed) {
      // OPTIONS: the methods a 405 would list, as a 204 (RFC 9110 9.3.7).
      if (auto allow = res.find(http::field::allow); allow != res.end()) {
        const std::string methods = std::string(allow->value()) + ", OPTIONS";
        res.result(http::status::no_content);
        res.erase(http::field::content_type);
        res.set(http::field::allow, methods);
        res.body().clear();
      }
    }
    if (res.result() == http::status::unauthorized) {
      res.set(http::field::www_authenticate, "Bearer realm=\"seqd\"");
    }
    // Over a rate, or no store/owner now: a well-behaved client waits a
    // second before it retries; an address blocked for failed
    // authentications, until its block ends.
    if (res.result() == http::status::too_many_requests ||
        res.result() == http::status::service_unavailable) {
      const int blocked =
          access && res.result() == http::status::too_many_requests ? access->throttled() : 0;
      res.set(http::field::retry_after, blocked > 0 ? std::to_string(blocked) : "1");
    }
    // Drop our responder once used: whatever still holds this call (e.g. an
    // allocator deadline timer) must not keep the connection alive.
    std::shared_ptr<HttpResponder> to = std::move(responder);
    Account(res);
    try {
      StampRequestId(res, ids.request.view());
      if (placement) StampPlacementVersion(res, placement->version());
      res.prepare_payload();
      // No Content-Length on a 204 (RFC 9110 8.6).
      if (res.result() == http::status::no_content) res.erase(http::field::content_length);
      to->Respond(std::move(res));
    } catch (const std::exception& e) {
      SEQD_LOG(kError).With(ids) << "respond callback threw: " << e.what();
    }
  }

  // Sends a 200 with `body` as `type` (and Cache-Control: no-store) unless
  // a response already went out: Finish(Make(ok, type, body)) without
  // building the message. Never throws.
  void FinishOk(std::string_view type, std::string_view body) {
    if (responded.exchange(true)) return;
    std::shared_ptr<HttpResponder> to = std::move(responder);
    try {
      if (metrics)
        metrics->CountRequest(Interface::kHttp, op, "ok", RequestMetrics::Since(started));
      to->RespondOk(OkAnswer{req.version, req.keep_alive, type, body, ids.request.view(),
                             placement ? placement->version() : -1});
    } catch (const std::exception& e) {
      SEQD_LOG(kError).With(ids) << "respond callback threw: " << e.what();
    }
  }

  // Metrics and the error log line of one answer.
  void Account(Response& res) const {
    const unsigned code = res.result_int();
    if (code < 400 && !metrics) return;
    const std::string_view status = code < 400              ? std::string_view("ok")
                                    : !status_label.empty() ? status_label
                                                            : MetricLabelForHttp(code);
    if (metrics)
      metrics->CountRequest(Interface::kHttp, op, status, RequestMetrics::Since(started));
    if (code < 400) return;
    if (code == 503) {
      // Unavailable (store down, no worker-id lease, draining): the cause is
      // logged where it happens; a retrying client must not flood the log,
      // so at most one line a second, with the count of those left out.
      static LogThrottle throttle;
      const std::optional<uint64_t> left_out = throttle.Take();
      if (!left_out) return;
      LogAnswer(LogLevel::kWarn, code, status, *left_out);
    } else if (code >= 500) {
      LogAnswer(LogLevel::kError, code, status);
    } else {  // client errors: debug, not to flood the log
      LogAnswer(LogLevel::kDebug, code, status);
    }
  }

  // The log line of an error answer, if `level` is on: the request's ids,
  // the op, the HTTP status and error code, the peer; with
  // `not_logged_503s`, how many 503 lines were left out before it.
  void LogAnswer(LogLevel level, unsigned code, std::string_view status,
                 std::optional<uint64_t> not_logged_503s = std::nullopt) const {
    if (!LogEnabled(level)) return;
    LogLine line(level);
    line.With(ids).With("op", op).With("status", code).With("code", status);
    if (access) line.With("peer", access->peer());
    if (not_logged_503s) line.With("not_logged_503s", *not_logged_503s);
    line << "http " << req.method_name << " " << path;
  }

  // Builds the response with `build`; any exception becomes a 500.
  template <typename F>
  void Reply(F&& build) {
    std::optional<Response> res;
    try {
      res.emplace(build());
    } catch (const std::exception& e) {
      SEQD_LOG(kError).With(ids) << "building response for " << path << " failed: " << e.what();
      res.emplace(ErrorJson(http::status::internal_server_error, "internal", "internal error"));
    }
    Finish(std::move(*res));
  }

  std::optional<std::string_view> RawParam(std::string_view name) const {
    return FindQueryParam(query, name);
  }
};

// The page a list asks for: `?after=KEY&limit=N` (keys greater than KEY, at
// most N of them, N in [1, 1000]).
struct Page {
  std::string after;
  size_t limit = kDefaultListLimit;
};

// The page of `call` (`default_limit` without ?limit=), or nullopt once a
// 400 naming the bad parameter is sent. Defined in key_routes.cc.
std::optional<Page> PageParams(ApiRouter::Call& call, size_t default_limit = kDefaultListLimit);

}  // namespace seqd
