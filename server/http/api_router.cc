#include "server/http/api_router.h"

#include <string>
#include <vector>

#include "common/key_text.h"
#include "server/http/api_call.h"
#include "server/http/stream/event_routes.h"
#include "server/http/routes/message_routes.h"
#include "server/http/routes/snowflake_routes.h"
#include "server/http/routes/status_page.h"
#include "server/service/cluster_api.h"
#include "server/service/key_admin_api.h"
#include "server/service/services.h"
#include "server/service/snowflake_api.h"

namespace seqd {
namespace {

constexpr std::string_view kMetricsType = "text/plain; version=0.0.4";
constexpr std::string_view kHtmlType = "text/html; charset=utf-8";

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) ==
                                 std::tolower(static_cast<unsigned char>(b));
                        });
  return it != haystack.end();
}

}  // namespace

std::string_view BearerSecret(const HttpRequest& req) {
  std::string_view v = req.authorization;
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return {};
  }
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  return v;
}

bool PrefersText(const HttpRequest& req) {
  const std::string_view v = req.accept;
  return ContainsNoCase(v, "text/plain") && !ContainsNoCase(v, "application/json");
}

ApiRouter::ApiRouter(const Services& services, RouterOptions options)
    : services_(services),
      options_(std::move(options)),
      stream_limits_(std::make_shared<StreamLimits>(options_.streams.max_streams,
                                                    options_.streams.max_streams_per_token)),
      events_(std::make_unique<EventRoutes>(services_, options_.streams, stream_limits_)),
      messages_(std::make_unique<MessageRoutes>(
          services.messages, LongPollDeps{services.messages, options_.streams.clock, stream_limits_,
                                          &services.metrics.streams()})),
      snowflake_(std::make_unique<SnowflakeRoutes>(
          services.snowflake.enabled() ? &services.snowflake : nullptr)) {}

ApiRouter::~ApiRouter() = default;

void ApiRouter::StopStreams() { stream_limits_->CancelAll(); }

namespace {

// The secret a request presents: its bearer token, or (EventSource cannot
// send headers) on the event routes only, ?access_token= (docs/security.md),
// decoded into `decoded`. Never logged.
std::string_view SecretOf(const HttpRequest& req, std::string_view path, std::string_view query,
                          std::optional<std::string>& decoded) {
  std::string_view secret = BearerSecret(req);
  if (secret.empty() && EventRoutes::IsEventsPath(path)) {
    if (std::optional<std::string_view> raw = FindQueryParam(query, "access_token")) {
      decoded = PercentDecode(*raw, true);
      if (decoded) secret = *decoded;
    }
  }
  return secret;
}

}  // namespace

std::optional<ApiRouter::Response> ApiRouter::RefuseBeforeBody(const HttpRequest& header,
                                                               std::string_view peer) {
  if (!services_.auth || !services_.auth->enabled() || options_.admin_only) return std::nullopt;
  const std::string_view target = header.target;
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query = q == std::string_view::npos ? "" : target.substr(q + 1);
  if (path.empty() || path[0] != '/') return std::nullopt;
  const SplitParts parts = Split(path.substr(1), '/');
  const PathSegments seg(parts.data(), parts.size());
  const HttpOp op = RequestOp(header.method, path, seg);
  const HttpOpRow& row = HttpOpFor(op);
  // Routes served without a token answer as usual (after the body).
  if (!row.permission || (op == HttpOp::kMetrics && !services_.metrics_auth)) return std::nullopt;
  std::optional<std::string> query_secret;
  const std::string_view secret = SecretOf(header, path, query, query_secret);
  const RequestIds ids = RequestIdsOf(header);
  Access access = IdentifyBy(services_.auth, secret, "http", std::string(peer), ids);
  if (access.principal()) return std::nullopt;  // the route decides (its scopes)
  std::optional<Response> out;
  auto call = std::make_shared<Call>();
  call->metrics = &services_.metrics;
  call->started = std::chrono::steady_clock::now();
  call->req = header;
  call->req.keep_alive = false;  // the body is left unread: the connection ends
  call->responder = RespondTo([&out](Response res) { out = std::move(res); });
  call->ids = ids;
  call->placement = services_.placement;
  call->op = row.metric_label;
  call->access.emplace(std::move(access));
  Status s = call->access->Check(*row.permission, {}, row.metric_label);
  call->Finish(call->ErrorJson(s.error()));
  return out;
}

void ApiRouter::Handle(HttpRequest req, std::string_view peer, std::shared_ptr<HttpResponder> to) {
  auto call = std::make_shared<Call>();
  call->metrics = &services_.metrics;
  call->started = std::chrono::steady_clock::now();
  call->req = std::move(req);
  call->responder = std::move(to);
  call->ids = RequestIdsOf(call->req);
  call->placement = services_.placement;
  try {
    std::string_view target = call->req.target;
    const size_t q = target.find('?');
    call->path = target.substr(0, q);
    if (q != std::string_view::npos) call->query = target.substr(q + 1);
    std::optional<std::string> query_secret;
    const std::string_view secret = SecretOf(call->req, call->path, call->query, query_secret);
    call->access.emplace(IdentifyBy(services_.auth, secret, "http", std::string(peer), call->ids));
    Route(call);
  } catch (const std::exception& e) {
    SEQD_LOG(kError).With(call->ids) << "handling " << call->path << " failed: " << e.what();
    call->Finish(
        call->ErrorJson(http::status::internal_server_error, "internal", "internal error"));
  }
}

void ApiRouter::HandleHealth(const std::shared_ptr<Call>& call) {
  call->Reply([&] {
    const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - options_.started);
    seqd::Json j;
    j["status"] = "ok";
    j["version"] = options_.version;
    j["uptime_s"] = uptime.count();
    return call->JsonResponse(http::status::ok, j);
  });
}

void ApiRouter::HandleReady(const std::shared_ptr<Call>& call) {
  if (options_.warming && options_.warming()) {
    return call->Reply([&] {
      return call->ErrorJson(http::status::service_unavailable,
                             ErrorCodeName(ErrorCode::kStoreUnavailable),
                             "opening database connections");
    });
  }
  services_.keys.CheckStore([call](Status s) {
    if (call->metrics) call->metrics->SetStoreUp(static_cast<bool>(s));
    call->Reply([&]() -> Response {
      if (!s) {
        const Error& e = s.error();
        return call->ErrorJson(http::status::service_unavailable, ErrorCodeName(e.code),
                               PublicMessage(e));
      }
      seqd::Json j;
      j["status"] = "ready";
      return call->JsonResponse(http::status::ok, j);
    });
  });
}

void ApiRouter::HandleMetrics(const std::shared_ptr<Call>& call) {
  call->Reply(
      [&] { return call->Make(http::status::ok, kMetricsType, services_.metrics.Render()); });
}

void ApiRouter::HandleStatusPage(const std::shared_ptr<Call>& call) {
  // Store health first, then the first page of registered keys (skipped
  // while the store is down: it would only fail the same way).
  services_.keys.CheckStore([this, call](Status health) {
    auto in = std::make_shared<StatusPageInput>();
    in->version = options_.version;
    if (const SnowflakeApi* gen = snowflake_->generator()) in->snowflake = gen->status();
    in->dense = services_.ids.dense_stats();
    in->is_dense = [&router = services_.ids](std::string_view key) { return router.IsDense(key); };
    if (const ClusterApi* node = services_.cluster) {
      in->cluster = StatusPageInput::Cluster{node->instance(), node->snapshot()};
    }
    if (services_.placement) in->placement = services_.placement->View();
    in->uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                  options_.started);
    in->store_up = health.ok();
    auto render = [this, call, in] {
      call->Reply([&] {
        in->snapshots = services_.ids.Snapshot();
        return call->Make(http::status::ok, kHtmlType, RenderStatusPage(*in));
      });
    };
    if (!health) {
      in->store_error = PublicMessage(health.error());
      in->rows_error = "store down";
      return render();
    }
    services_.keys.ListKeys({}, kDefaultListLimit,
                            [in, render](Result<std::vector<KeyRow>> rows) mutable {
                              if (rows) {
                                in->rows_truncated = rows->size() == kDefaultListLimit;
                                in->rows = std::move(*rows);
                              } else {
                                in->rows_error = PublicMessage(rows.error());
                              }
                              render();
                            });
  });
}

}  // namespace seqd
