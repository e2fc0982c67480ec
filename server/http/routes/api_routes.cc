// ApiRouter's routing: a table from each op (server/http/http_ops.h) to its
// route function, and the route functions. A route function checks the
// method, the token's scope for the route's key and the path's shape, then
// calls the op's handler (id_routes.cc, id_query_routes.cc, key_routes.cc,
// cluster_routes.cc, leaf_monitor_routes.cc, api_router.cc) or a route
// class (events, snowflake, messages).
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/key_text.h"
#include "common/percent_decode.h"
#include "server/http/api_call.h"
#include "server/http/api_router.h"
#include "server/http/stream/event_routes.h"
#include "server/http/routes/message_routes.h"
#include "server/http/routes/snowflake_routes.h"

namespace seqd {
namespace {

using Call = ApiRouter::Call;
using Response = ApiRouter::Response;

void NotFound(Call& call) {
  // The path is not echoed: no request text is reflected in an answer.
  call.Finish(call.ErrorJson(http::status::not_found, "not_found", "no such endpoint"));
}

void MethodNotAllowed(Call& call, std::string_view allow) {
  Response res = call.ErrorJson(http::status::method_not_allowed, "method_not_allowed",
                                "method not allowed here; use " + std::string(allow));
  res.set(http::field::allow, ToBeast(allow));
  call.Finish(std::move(res));
}

// A raw path segment as a key; a bad escape is answered 400 (as text for
// Leaf's routes) and gives nullopt.
std::optional<std::string> DecodeKey(Call& call, std::string_view raw, bool text) {
  std::optional<std::string> key = PercentDecode(raw, /*plus_is_space=*/false);
  if (!key) {
    const std::string msg = "key has a malformed percent-escape";
    call.Finish(text ? call.ErrorText(MakeError(ErrorCode::kInvalidArgument, msg))
                     : call.ErrorJson(http::status::bad_request, "invalid_argument", msg));
  }
  return key;
}

// The admin listener's paths: /, /healthz, /readyz, /metrics, /admin/cluster.
bool IsAdminPage(std::string_view path, PathSegments seg) {
  return path == "/" ||
         (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "readyz" || seg[0] == "metrics")) ||
         (seg.size() == 2 && seg[0] == "admin" && seg[1] == "cluster");
}

// True if `table` has one row per HttpOp, in enum order.
template <typename Table>
constexpr bool OneRowPerOp(const Table& table) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (static_cast<size_t>(table[i].first) != i) return false;
  }
  return static_cast<size_t>(HttpOp::kOther) + 1 == table.size();
}

}  // namespace

HttpOp RequestOp(http::verb method, std::string_view path, PathSegments seg) {
  if (path == "/") return HttpOp::kStatusPage;
  if (seg.empty()) return HttpOp::kOther;
  if (std::optional<HttpOp> op = SnowflakeRoutes::OpFor(seg)) return *op;
  if (seg[0] == "seq" && seg.size() == 2) return HttpOp::kSeq;
  if (seg.size() == 1 && seg[0] == "max_ids") return HttpOp::kMaxIds;
  if (seg.size() == 1 && seg[0] == "min_seqs") return HttpOp::kMinSeqs;
  if (seg.size() == 1 && seg[0] == "user_seqs") return HttpOp::kUserSeqs;
  if (seg[0] == "api" && seg.size() == 4 && seg[1] == "segment") return HttpOp::kLeafSegment;
  if (seg[0] == "admin") return HttpOp::kAdmin;
  if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "readyz")) return HttpOp::kHealth;
  if (seg.size() == 1 && seg[0] == "metrics") return HttpOp::kMetrics;
  if (seg.size() == 1 && seg[0] == "cache") return HttpOp::kLeafCache;
  if (seg.size() == 1 && seg[0] == "db") return HttpOp::kLeafDb;
  if ((seg.size() == 1 && seg[0] == "events") ||
      (seg.size() == 3 && seg[0] == "conversations" && seg[2] == "events")) {
    return HttpOp::kMsgEvents;
  }
  if (std::optional<HttpOp> op = MessageRoutes::OpFor(method, seg)) return *op;
  return HttpOp::kOther;
}

ApiRouter::RouteFn ApiRouter::RouteFor(HttpOp op) {
  // One row per HttpOp, in enum order.
  static constexpr std::array<std::pair<HttpOp, RouteFn>, 25> kTable = {{
      {HttpOp::kStatusPage, &ApiRouter::RouteStatusPage},
      {HttpOp::kSeq, &ApiRouter::RouteSeq},
      {HttpOp::kLeafSegment, &ApiRouter::RouteLeafSegment},
      {HttpOp::kAdmin, &ApiRouter::RouteAdmin},
      {HttpOp::kHealth, &ApiRouter::RouteHealth},
      {HttpOp::kMetrics, &ApiRouter::RouteMetrics},
      {HttpOp::kSnowflake, &ApiRouter::RouteSnowflake},
      {HttpOp::kSnowflakeDecode, &ApiRouter::RouteSnowflake},
      {HttpOp::kMsgSend, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgPull, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgDelete, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgRecall, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgMinSeq, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgMarkRead, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgGetMember, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgSetMember, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgMaxSeqs, &ApiRouter::RouteToClasses},
      {HttpOp::kMsgSyncUser, &ApiRouter::RouteToClasses},
      {HttpOp::kLeafCache, &ApiRouter::RouteLeafMonitor},
      {HttpOp::kLeafDb, &ApiRouter::RouteLeafMonitor},
      {HttpOp::kMsgEvents, &ApiRouter::RouteEvents},
      {HttpOp::kMaxIds, &ApiRouter::RouteKeyValues},
      {HttpOp::kMinSeqs, &ApiRouter::RouteKeyValues},
      {HttpOp::kUserSeqs, &ApiRouter::RouteKeyValues},
      {HttpOp::kOther, &ApiRouter::RouteToClasses},
  }};
  static_assert(OneRowPerOp(kTable), "the routing table: one row per HttpOp, in enum order");
  return kTable[static_cast<size_t>(op)].second;
}

void ApiRouter::Route(const std::shared_ptr<Call>& call) {
  const std::string_view path = call->path;
  if (path.empty() || path[0] != '/') return NotFound(*call);
  const SplitParts parts = Split(path.substr(1), '/');
  Routed r{PathSegments(parts.data(), parts.size()), HttpOp::kOther, call->req.method};
  // HEAD is GET without the content (RFC 9110 9.3.2): routed as GET, and the
  // connection leaves the body out. A route whose GET hands out IDs answers
  // HEAD without taking any: a HEAD (a monitor, a proxy) must not use IDs up.
  r.head = r.method == http::verb::head;
  if (r.head) r.method = http::verb::get;
  r.op = RequestOp(r.method, path, r.seg);
  call->op = HttpOpFor(r.op).metric_label;
  if (options_.admin_only && !IsAdminPage(path, r.seg)) return NotFound(*call);
  (this->*RouteFor(r.op))(call, r);
}

void ApiRouter::RouteStatusPage(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  // People with either an admin or a metrics token may look.
  const Principal* who = call->access->principal();
  if (!(who && who->May(Permission::kMetrics)) && !call->Permit(r.op)) return;
  HandleStatusPage(call);
}

void ApiRouter::RouteSeq(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  std::optional<std::string> key = DecodeKey(*call, r.seg[1], false);
  if (!key || !call->Permit(r.op, *key)) return;
  if (r.head) {  // checked as GET checks it, without taking an ID
    if (Status s = ValidateClientKey(*key); !s) return call->Finish(call->ErrorJson(s.error()));
    return call->FinishOk(kJsonType, "");
  }
  HandleSeq(call, std::move(*key), false);
}

void ApiRouter::RouteLeafSegment(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.seg[2] != "get") return RouteToClasses(call, r);
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  std::optional<std::string> key = DecodeKey(*call, r.seg[3], true);
  if (!key || !call->Permit(r.op, *key, true)) return;
  if (r.head) {
    if (Status s = ValidateClientKey(*key); !s) return call->Finish(call->ErrorText(s.error()));
    return call->FinishOk(kTextType, "");
  }
  HandleSeq(call, std::move(*key), true);
}

void ApiRouter::RouteKeyValues(const std::shared_ptr<Call>& call, const Routed& r) {
  const bool get = r.method == http::verb::get;
  const bool put = r.method == http::verb::put;
  if (r.op == HttpOp::kMaxIds && !get && r.method != http::verb::post) {
    return MethodNotAllowed(*call, "GET, POST");
  }
  if (r.op != HttpOp::kMaxIds && !get && !put && r.method != http::verb::post) {
    return MethodNotAllowed(*call, "GET, POST, PUT");
  }
  if (!get && !call->PassesCrossSiteRule()) return;
  if (r.head) return call->FinishOk(kJsonType, "");  // HEAD: nothing read
  if (r.op == HttpOp::kUserSeqs) return put ? HandleSetUserSeqs(call) : HandleUserSeqs(call, get);
  if (put) return HandleSetMinSeqs(call);
  HandleKeyValues(call, r.op == HttpOp::kMaxIds, get);
}

void ApiRouter::RouteAdmin(const std::shared_ptr<Call>& call, const Routed& r) {
  // Everything under /admin needs the admin scope.
  if (!call->Permit(r.op)) return;
  const PathSegments seg = r.seg;
  if (seg.size() >= 2 && seg[1] == "keys") return RouteAdminKeys(call, r);
  if (seg.size() == 2 && (seg[1] == "cluster" || seg[1] == "cache")) {
    if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
    return seg[1] == "cluster" ? HandleCluster(call) : HandleCache(call);
  }
  if (seg.size() == 2 && seg[1] == "placement") {
    if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
    return HandlePlacement(call);
  }
  if (seg.size() == 3 && seg[1] == "placement" && seg[2] == "move") {
    if (r.method != http::verb::post) return MethodNotAllowed(*call, "POST");
    if (call->PassesCrossSiteRule()) HandleMoveShard(call);
    return;
  }
  RouteToClasses(call, r);  // /admin/snowflake
}

void ApiRouter::RouteAdminKeys(const std::shared_ptr<Call>& call, const Routed& r) {
  const PathSegments seg = r.seg;
  const bool get = r.method == http::verb::get;
  if (seg.size() == 2) {
    if (get) return HandleListKeys(call);
    if (r.method != http::verb::post) return MethodNotAllowed(*call, "GET, POST");
    if (call->PassesCrossSiteRule()) HandleCreateKey(call);
    return;
  }
  if (seg.size() == 3) {
    if (!get) return MethodNotAllowed(*call, "GET");
    if (std::optional<std::string> key = DecodeKey(*call, seg[2], false)) {
      HandleGetKey(call, std::move(*key));
    }
    return;
  }
  if (seg.size() == 4 && seg[3] == "step") {
    if (r.method != http::verb::put) return MethodNotAllowed(*call, "PUT");
    if (!call->PassesCrossSiteRule()) return;
    if (std::optional<std::string> key = DecodeKey(*call, seg[2], false)) {
      HandleSetStep(call, std::move(*key));
    }
    return;
  }
  NotFound(*call);
}

void ApiRouter::RouteHealth(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  if (r.seg[0] == "healthz") return HandleHealth(call);
  HandleReady(call);
}

void ApiRouter::RouteMetrics(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  if (services_.metrics_auth && !call->Permit(r.op)) return;
  HandleMetrics(call);
}

void ApiRouter::RouteLeafMonitor(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  if (!call->Permit(r.op)) return;
  if (r.op == HttpOp::kLeafCache) return HandleLeafCache(call);
  HandleLeafDb(call);
}

void ApiRouter::RouteEvents(const std::shared_ptr<Call>& call, const Routed& r) {
  if (r.method != http::verb::get) return MethodNotAllowed(*call, "GET");
  events_->Handle(call, r.seg);
}

void ApiRouter::RouteSnowflake(const std::shared_ptr<Call>& call, const Routed& r) {
  if (!call->Permit(r.op)) return;
  if (r.head && r.op == HttpOp::kSnowflake) {  // GETs that hand out IDs
    return call->FinishOk(PrefersText(call->req) ? kTextType : kJsonType, "");
  }
  RouteToClasses(call, r);
}

void ApiRouter::RouteToClasses(const std::shared_ptr<Call>& call, const Routed& r) {
  auto snowflake_reply = [call](SnowflakeRoutes::Reply reply) {
    call->status_label = reply.code;
    call->Reply([&] {
      Response res =
          call->Make(reply.status, reply.text ? kTextType : kJsonType, std::move(reply.body));
      if (!reply.allow.empty()) res.set(http::field::allow, reply.allow);
      return res;
    });
  };
  if (snowflake_->Handle(r.method, r.seg, call->query, PrefersText(call->req), snowflake_reply)) {
    return;
  }
  auto message_reply = [call](MessageRoutes::Reply reply) {
    call->status_label = reply.code;
    Response res = call->Make(reply.status, kJsonType, std::move(reply.json));
    if (!reply.allow.empty()) res.set(http::field::allow, reply.allow);
    if (!reply.location.empty()) res.set(http::field::location, reply.location);
    call->Finish(std::move(res));
  };
  if (messages_->Handle(r.method, r.seg, call->query, call->req.body, RefusedAsCrossSite(call->req),
                        *call->access, message_reply)) {
    return;
  }
  NotFound(*call);
}

}  // namespace seqd
