// The HTTP API as a pure request -> response function: no sockets, no
// threads of its own. HttpServer feeds it parsed requests; tests call it
// directly.
//
// Endpoints (JSON unless noted):
//   GET  /seq/{key}[?count=N]          IDs (JSON, or text/plain by Accept)
//   GET  /api/segment/get/{key}        Leaf-compatible bare ID, text/plain
//   GET  /admin/keys[?after=&limit=]   rows + in-memory state, paginated
//   POST /admin/keys                   create {"key","step","description"?}
//   GET  /admin/keys/{key}             one row + in-memory state
//   PUT  /admin/keys/{key}/step        {"step":N}
//   GET  /admin/cache                  keys held in memory, by page (?after=&limit=)
//   GET  /cache, /db                   Leaf's monitor routes in Leaf's field names
//                                      (admin scope; ?after=&limit=, see leaf_monitor_routes.cc)
//   GET  /                             status page for people (text/html)
//   GET  /healthz, /readyz, /metrics
//   the message store's paths (see message_routes.h)
//   the snowflake paths (see snowflake_routes.h): /snowflake[?count=N],
//     /snowflake/decode/{id}, Leaf's /api/snowflake/get/{key} and
//     /decodeSnowflakeId; 404 "snowflake IDs are disabled" while the
//     generator is not enabled
// Everything is served from the Services seam (server/service/services.h);
// every answer is counted in services.metrics (interface "http").
// In admin mode (RouterOptions::admin_only) only /, /healthz, /readyz, /admin/cluster and
// /metrics; everything else is 404.
// Errors: {"error":{"code":"...","message":"..."}} with the status from
// HttpStatusFor(); kInternal messages are replaced by "internal error".
// Tokens (docs/security.md): `Authorization: Bearer <secret>`; each path
// needs its scope (ids:KEY, msg:...:CONV, snowflake, admin; /metrics needs
// metrics with Services::metrics_auth; /healthz and /readyz are open). No
// or unknown token: 401 with WWW-Authenticate; a scope missing: 403.
//
// Thread safety: Handle() is safe from any thread. The responder is
// answered exactly once, on the calling thread or on an
// allocator/database/timer thread; it must not block.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "server/http/stream/event_stream.h"
#include "server/http/http_ops.h"
#include "server/http/http_request.h"
#include "server/http/http_responder.h"
#include "server/http/http_util.h"
#include "server/http/stream/stream_limits.h"
#include "server/service/services.h"

namespace seqd {

class Clock;
class EventRoutes;
class MessageRoutes;
class SnowflakeRoutes;

// Held requests: Server-Sent Events streams (server/http/stream/event_routes.h)
// and long-polls (server/http/stream/long_poll.h).
struct StreamOptions {
  Clock* clock = nullptr;  // heartbeats and long-poll deadlines; null: neither (no waits)
  EventStreamOptions events;
  size_t max_buffer_bytes = 1 << 20;  // a stream's unsent bytes before `event: dropped`
  size_t max_streams = 10000;         // streams and waiting long-polls, in all
  size_t max_streams_per_token = 64;  // the same per token (tokens on only)
};

struct RouterOptions {
  std::string version;
  std::chrono::steady_clock::time_point started;
  // Admin mode (the admin listener): only GET /, /healthz, /readyz and
  // /metrics are served; every other path is 404, so client traffic cannot
  // reach the admin port.
  bool admin_only = false;
  // While this returns true, /readyz answers 503 (the store's connections
  // are being opened). Unset: never.
  std::function<bool()> warming = nullptr;
  StreamOptions streams = {};
};

class ApiRouter {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = HttpResponse;
  using Respond = std::function<void(Response)>;

  // The objects `services` refers to must outlive the router and every
  // pending call.
  ApiRouter(const Services& services, RouterOptions options);
  ~ApiRouter();
  ApiRouter(const ApiRouter&) = delete;
  ApiRouter& operator=(const ApiRouter&) = delete;

  // Answers `req` through `to`. `peer`: the client's address:port, for
  // audit lines.
  void Handle(HttpRequest req, std::string_view peer, std::shared_ptr<HttpResponder> to);
  // The same for a Beast message, answered to a function (tests, fuzzer).
  void Handle(const Request& req, std::string_view peer, Respond respond) {
    Handle(FromBeast(req), peer, RespondTo(std::move(respond)));
  }
  void Handle(const Request& req, Respond respond) { Handle(req, {}, std::move(respond)); }

  // With tokens on, the answer to a request whose header (`header`: its
  // body not read) shows no valid token for a route that needs one: 401,
  // or 429 while `peer`'s address is blocked for failed authentications
  // (server/auth/auth_failures.h). Connection: close, since the caller
  // leaves the body unread. nullopt: read the body and Handle() as usual.
  std::optional<Response> RefuseBeforeBody(const HttpRequest& header, std::string_view peer);

  const Services& services() const { return services_; }

  // Server shutdown: ends every stream (after what it has queued) and
  // answers every waiting long-poll now; later ones are refused.
  void StopStreams();

  struct Call;  // one request in flight; opaque, public only for the .cc's helpers

 private:
  // What routing found of a request (api_routes.cc).
  struct Routed {
    PathSegments seg;  // the path split at '/', still percent-encoded
    HttpOp op;
    boost::beast::http::verb method;  // HEAD is routed as GET
    bool head = false;                // a HEAD: answered as GET, never taking IDs
  };
  // An op's route function: method, scope and path checks, then its handler.
  using RouteSignature = void(const std::shared_ptr<Call>& call, const Routed& r);
  using RouteFn = RouteSignature ApiRouter::*;
  // The routing table: the route function of each op.
  static RouteFn RouteFor(HttpOp op);
  // Splits the path, finds its op and runs the op's route function.
  void Route(const std::shared_ptr<Call>& call);
  // Each op's route.
  RouteSignature RouteStatusPage, RouteSeq, RouteLeafSegment, RouteKeyValues, RouteAdmin,
      RouteAdminKeys, RouteHealth, RouteMetrics, RouteLeafMonitor, RouteEvents, RouteSnowflake;
  // The snowflake and message route classes, then 404.
  RouteSignature RouteToClasses;
  void HandleSeq(const std::shared_ptr<Call>& call, std::string key, bool leaf);
  // GET and POST /max_ids, /min_seqs (id_query_routes.cc): the keys from
  // the query (`key=` repeated) or the body ({"keys": [...]}).
  void HandleKeyValues(const std::shared_ptr<Call>& call, bool max_ids, bool from_query);
  // PUT /min_seqs {"min_seqs": {"key": value, ...}}.
  void HandleSetMinSeqs(const std::shared_ptr<Call>& call);
  // USER_SEQS (GET with the query string, POST with a body) and
  // SET_USER_SEQS (PUT).
  void HandleUserSeqs(const std::shared_ptr<Call>& call, bool from_query);
  void HandleSetUserSeqs(const std::shared_ptr<Call>& call);
  // MAX_IDS with each key's allocation time (`with_time`).
  void HandleMaxIdsWithTimes(const std::shared_ptr<Call>& call, std::vector<std::string> keys);
  void HandleListKeys(const std::shared_ptr<Call>& call);
  void HandleGetKey(const std::shared_ptr<Call>& call, std::string key);
  void HandleCreateKey(const std::shared_ptr<Call>& call);
  void HandleSetStep(const std::shared_ptr<Call>& call, std::string key);
  void HandleCache(const std::shared_ptr<Call>& call);
  void HandleCluster(const std::shared_ptr<Call>& call);
  void HandlePlacement(const std::shared_ptr<Call>& call);
  void HandleMoveShard(const std::shared_ptr<Call>& call);
  void HandleLeafCache(const std::shared_ptr<Call>& call);
  void HandleLeafDb(const std::shared_ptr<Call>& call);
  void HandleHealth(const std::shared_ptr<Call>& call);
  void HandleReady(const std::shared_ptr<Call>& call);
  void HandleMetrics(const std::shared_ptr<Call>& call);
  void HandleStatusPage(const std::shared_ptr<Call>& call);

  const Services services_;  // references; copied so the caller's struct may go
  const RouterOptions options_;
  const std::shared_ptr<StreamLimits> stream_limits_;
  const std::unique_ptr<EventRoutes> events_;
  const std::unique_ptr<MessageRoutes> messages_;
  const std::unique_ptr<SnowflakeRoutes> snowflake_;
};

}  // namespace seqd
