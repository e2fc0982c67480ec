#include "server/http/api_router.h"

#include <algorithm>
#include <atomic>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <cctype>
#include <charconv>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "server/core/key_admin.h"
#include "server/core/key_rules.h"
#include "server/core/log.h"
#include "server/core/segment_allocator.h"
#include "server/http/http_util.h"
#include "server/http/message_routes.h"
#include "server/http/snowflake_routes.h"
#include "server/http/status_page.h"
#include "server/metrics/metrics.h"
#include "server/service/services.h"

namespace seqd {

namespace http = boost::beast::http;
using Json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kJsonType = "application/json";
constexpr std::string_view kTextType = "text/plain";
constexpr std::string_view kMetricsType = "text/plain; version=0.0.4";
constexpr std::string_view kHtmlType = "text/html; charset=utf-8";
constexpr size_t kDefaultListLimit = 100;

std::string_view ToStd(boost::beast::string_view s) { return {s.data(), s.size()}; }
boost::beast::string_view ToBeast(std::string_view s) { return {s.data(), s.size()}; }

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                        [](char a, char b) {
                          return std::tolower(static_cast<unsigned char>(a)) ==
                                 std::tolower(static_cast<unsigned char>(b));
                        });
  return it != haystack.end();
}

// True if the request's Accept header asks for text/plain and not JSON.
bool PrefersText(const ApiRouter::Request& req) {
  auto accept = req.find(http::field::accept);
  if (accept == req.end()) return false;
  const std::string_view v = ToStd(accept->value());
  return ContainsNoCase(v, "text/plain") && !ContainsNoCase(v, "application/json");
}

Json BufferJson(const BufferSnapshot& b) {
  Json j;
  j["ready"] = b.ready;
  j["first"] = b.first;
  j["next"] = b.next;
  j["last"] = b.last;
  j["step"] = b.step;
  j["remaining"] = b.ready ? std::max<int64_t>(0, b.last - b.next + 1) : 0;
  return j;
}

Json SnapshotJson(const KeySnapshot& s) {
  Json j;
  j["key"] = s.key;
  j["auto_created"] = s.auto_created;
  j["loading"] = s.loading;
  j["step"] = s.step;
  j["table_step"] = s.table_step;
  j["parked"] = s.parked;
  j["reservations"] = s.reservations;
  j["idle_ms"] = s.idle_ms;
  j["last_error"] = s.last_error ? Json(*s.last_error) : Json(nullptr);
  j["current"] = BufferJson(s.current);
  j["next"] = BufferJson(s.next);
  return j;
}

Json RowJson(const KeyRow& row) {
  Json j;
  j["key"] = row.key;
  j["max_id"] = row.max_id;
  j["step"] = row.step;
  j["description"] = row.description;
  j["update_time_ms"] = row.update_time_ms;
  return j;
}

Json RowWithCacheJson(const KeyRow& row, const SegmentAllocator& allocator) {
  Json j = RowJson(row);
  std::optional<KeySnapshot> snap = allocator.SnapshotKey(row.key);
  j["cache"] = snap ? SnapshotJson(*snap) : Json(nullptr);
  return j;
}

}  // namespace

// One request in flight. Shared by the callbacks that may complete it.
namespace {

// The `op` label of an HTTP request (docs/metrics.md).
std::string_view HttpOpName(http::verb method, std::string_view path) {
  if (path == "/") return "status";
  const std::vector<std::string_view> seg =
      Split(path.size() > 1 ? path.substr(1) : std::string_view(), '/');
  if (seg.empty()) return "other";
  if (std::string_view op = SnowflakeRoutes::OpName(seg); !op.empty()) return op;
  if (seg[0] == "seq" && seg.size() == 2) return "seq";
  if (seg[0] == "api" && seg.size() == 4 && seg[1] == "segment") return "leaf_segment";
  if (seg[0] == "admin") return "admin";
  if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "readyz")) return "health";
  if (seg.size() == 1 && seg[0] == "metrics") return "metrics";
  if (seg[0] == "users") return "msg_batch";
  if (seg[0] == "conversations") {
    if (seg.size() == 2) return "msg_batch";  // /conversations/max_seqs
    if (seg.size() >= 3 && seg[2] == "members") return "msg_member";
    if (seg.size() >= 3 && seg[2] == "min_seq") return "msg_status";
    if (seg.size() >= 3 && seg[2] == "messages") {
      if (seg.size() == 3) return method == http::verb::post ? "msg_send" : "msg_pull";
      if (seg.size() == 4 && method == http::verb::get) return "msg_pull";
      return "msg_status";  // delete, recall
    }
  }
  return "other";
}

// The `status` label of an error answer: the error body's code if it is a
// known one, else a name for the HTTP status.
std::string_view ErrorStatusName(const ApiRouter::Response& res) {
  const std::string& body = res.body();
  constexpr std::string_view kCode = "\"code\":\"";
  if (const size_t at = body.find(kCode); at != std::string::npos) {
    const size_t from = at + kCode.size();
    const size_t to = body.find('"', from);
    if (to != std::string::npos) {
      const std::string_view code(body.data() + from, to - from);
      for (std::string_view known : Metrics::Statuses()) {
        if (known == code) return known;
      }
    }
  }
  switch (res.result()) {
    case http::status::bad_request:
      return "invalid_argument";
    case http::status::not_found:
      return "not_found";
    case http::status::method_not_allowed:
      return "method_not_allowed";
    case http::status::payload_too_large:
      return "payload_too_large";
    case http::status::service_unavailable:
      return "store_unavailable";
    case http::status::internal_server_error:
      return "internal";
    default:
      return "other";
  }
}

}  // namespace

struct ApiRouter::Call {
  Request req;
  Respond respond;
  std::string_view path;  // into req.target()
  std::string_view query;
  std::atomic<bool> responded{false};
  // GET /seq and the Leaf endpoint: what the answer looks like.
  std::string key;
  bool seq_batch = false;  // ?count= given: answer with ranges
  bool seq_text = false;   // Accept: text/plain
  bool seq_leaf = false;   // Leaf's bare-ID text endpoint
  Metrics* metrics = nullptr;
  std::chrono::steady_clock::time_point started;

  ApiRouter::Response Make(http::status status, std::string_view type, std::string body) const {
    Response res{status, req.version()};
    res.set(http::field::content_type, ToBeast(type));
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    return res;
  }
  ApiRouter::Response JsonResponse(http::status status, const seqd::Json& j) const {
    return Make(status, kJsonType, Dump(j));
  }
  ApiRouter::Response ErrorJson(http::status status, std::string_view code,
                                std::string message) const {
    seqd::Json j;
    j["error"]["code"] = code;
    j["error"]["message"] = std::move(message);
    return JsonResponse(status, j);
  }
  ApiRouter::Response ErrorJson(const Error& error) const {
    return ErrorJson(HttpStatusFor(error.code), ErrorCodeName(error.code), PublicMessage(error));
  }

  // Sends `res` unless a response already went out. Never throws.
  void Finish(Response res) {
    if (responded.exchange(true)) return;
    // Drop our copy of `respond` once used: whatever still holds this call
    // (e.g. an allocator deadline timer) must not keep the connection alive.
    Respond fn = std::move(respond);
    respond = nullptr;
    Account(res);
    try {
      res.prepare_payload();
      fn(std::move(res));
    } catch (const std::exception& e) {
      SEQD_LOG(kError) << "respond callback threw: " << e.what();
    }
  }

  // Metrics and the error log line of one answer.
  void Account(Response& res) const {
    const unsigned code = res.result_int();
    if (code < 400 && !metrics) return;
    const std::string_view op = HttpOpName(req.method(), path);
    const std::string_view status = code < 400 ? std::string_view("ok") : ErrorStatusName(res);
    if (metrics) metrics->CountRequest(Interface::kHttp, op, status, Metrics::Since(started));
    if (code < 400) return;
    // Errors carry a request id: in the X-Request-Id header and the log line.
    static std::atomic<uint64_t> next_request_id{1};
    const uint64_t id = next_request_id.fetch_add(1, std::memory_order_relaxed);
    res.set("X-Request-Id", std::to_string(id));
    if (code == 503) {
      // Unavailable (store down, no worker-id lease, draining): the cause is
      // logged where it happens; a retrying client must not flood the log,
      // so at most one line a second, with the count of those left out.
      static std::atomic<int64_t> last_logged_ms{-1000};
      static std::atomic<uint64_t> left_out{0};
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
      int64_t last = last_logged_ms.load(std::memory_order_relaxed);
      if (now_ms - last < 1000 || !last_logged_ms.compare_exchange_strong(last, now_ms)) {
        left_out.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      SEQD_LOG(kWarn) << "http request_id=" << id << " op=" << op << " status=" << code
                      << " code=" << status << " " << ToStd(req.method_string()) << " " << path
                      << " (" << left_out.exchange(0) << " more 503s not logged)";
    } else if (code >= 500) {
      SEQD_LOG(kError) << "http request_id=" << id << " op=" << op << " status=" << code
                       << " code=" << status << " " << ToStd(req.method_string()) << " " << path;
    } else {  // client errors: debug, not to flood the log
      SEQD_LOG(kDebug) << "http request_id=" << id << " op=" << op << " status=" << code
                       << " code=" << status << " " << ToStd(req.method_string()) << " " << path;
    }
  }

  // Builds the response with `build`; any exception becomes a 500.
  template <typename F>
  void Reply(F&& build) {
    std::optional<Response> res;
    try {
      res.emplace(build());
    } catch (const std::exception& e) {
      SEQD_LOG(kError) << "building response for " << path << " failed: " << e.what();
      res.emplace(ErrorJson(http::status::internal_server_error, "internal", "internal error"));
    }
    Finish(std::move(*res));
  }

  std::optional<std::string_view> RawParam(std::string_view name) const {
    return FindQueryParam(query, name);
  }
};

namespace {

// The answer to GET /seq or Leaf's endpoint. Keys are validated to a charset
// that needs no JSON escaping, so the hot path formats JSON by hand.
ApiRouter::Response SeqResponse(const ApiRouter::Call& call, const Result<IdBatch>& result) {
  if (!result) {
    const Error& error = result.error();
    if (call.seq_leaf) {
      return call.Make(HttpStatusFor(error.code), kTextType, PublicMessage(error));
    }
    return call.ErrorJson(error);
  }
  const IdBatch& ids = *result;
  if (ids.ranges.empty()) {
    return call.ErrorJson(MakeError(ErrorCode::kInternal, "allocator returned no IDs"));
  }
  if (call.seq_leaf) {
    return call.Make(http::status::ok, kTextType, std::to_string(ids.ranges.front().first));
  }
  std::string body;
  if (call.seq_text) {
    for (const IdRange& r : ids.ranges) {
      for (int64_t id = r.first; id <= r.last; ++id) {
        body += std::to_string(id);
        body += '\n';
      }
    }
    return call.Make(http::status::ok, kTextType, std::move(body));
  }
  body.reserve(64 + call.key.size() + 40 * ids.ranges.size());
  body += R"({"key":")";
  body += call.key;
  if (call.seq_batch) {
    body += R"(","count":)";
    body += std::to_string(ids.count());
    body += R"(,"ranges":[)";
    for (size_t i = 0; i < ids.ranges.size(); ++i) {
      if (i > 0) body += ',';
      body += R"({"first":)";
      body += std::to_string(ids.ranges[i].first);
      body += R"(,"last":)";
      body += std::to_string(ids.ranges[i].last);
      body += '}';
    }
    body += "]}";
  } else {
    body += R"(","id":)";
    body += std::to_string(ids.ranges.front().first);
    body += '}';
  }
  return call.Make(http::status::ok, kJsonType, std::move(body));
}

}  // namespace

ApiRouter::ApiRouter(const Services& services, RouterOptions options)
    : services_(services),
      options_(std::move(options)),
      messages_(std::make_unique<MessageRoutes>(services.messages)),
      snowflake_(std::make_unique<SnowflakeRoutes>(
          services.snowflake.enabled() ? &services.snowflake : nullptr)) {}

ApiRouter::~ApiRouter() = default;

void ApiRouter::Handle(Request req, Respond respond) {
  auto call = std::make_shared<Call>();
  call->metrics = &services_.metrics;
  call->started = std::chrono::steady_clock::now();
  call->req = std::move(req);
  call->respond = std::move(respond);
  try {
    std::string_view target = ToStd(call->req.target());
    const size_t q = target.find('?');
    call->path = target.substr(0, q);
    if (q != std::string_view::npos) call->query = target.substr(q + 1);
    Route(call);
  } catch (const std::exception& e) {
    SEQD_LOG(kError) << "handling " << call->path << " failed: " << e.what();
    call->Finish(
        call->ErrorJson(http::status::internal_server_error, "internal", "internal error"));
  }
}

void ApiRouter::Route(const std::shared_ptr<Call>& call) {
  const std::string_view path = call->path;
  const http::verb method = call->req.method();
  auto not_found = [&] {
    call->Finish(call->ErrorJson(http::status::not_found, "not_found",
                                 "no such endpoint: " + std::string(path)));
  };
  if (path.empty() || path[0] != '/') return not_found();
  const std::vector<std::string_view> seg = Split(path.substr(1), '/');

  // Resolves a raw path segment to a key; on a bad escape answers 400.
  auto decode_key = [&](std::string_view raw, bool text) -> std::optional<std::string> {
    std::optional<std::string> key = PercentDecode(raw, /*plus_is_space=*/false);
    if (!key) {
      const std::string msg = "key has a malformed percent-escape";
      call->Finish(text ? call->Make(http::status::bad_request, kTextType, msg)
                        : call->ErrorJson(http::status::bad_request, "invalid_argument", msg));
    }
    return key;
  };
  auto method_not_allowed = [&](std::string_view allow) {
    Response res = call->ErrorJson(http::status::method_not_allowed, "method_not_allowed",
                                   "method " + std::string(ToStd(call->req.method_string())) +
                                       " is not allowed on " + std::string(path) + "; use " +
                                       std::string(allow));
    res.set(http::field::allow, ToBeast(allow));
    call->Finish(std::move(res));
  };
  const bool get = method == http::verb::get;

  if (options_.admin_only && path != "/" &&
      !(seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "readyz" || seg[0] == "metrics"))) {
    return not_found();
  }
  if (path == "/") {
    if (!get) return method_not_allowed("GET");
    return HandleStatusPage(call);
  }
  if (seg.size() == 2 && seg[0] == "seq") {
    if (!get) return method_not_allowed("GET");
    if (auto key = decode_key(seg[1], false)) HandleSeq(call, std::move(*key), false);
    return;
  }
  if (seg.size() == 4 && seg[0] == "api" && seg[1] == "segment" && seg[2] == "get") {
    if (!get) return method_not_allowed("GET");
    if (auto key = decode_key(seg[3], true)) HandleSeq(call, std::move(*key), true);
    return;
  }
  if (seg.size() >= 2 && seg[0] == "admin" && seg[1] == "keys") {
    if (seg.size() == 2) {
      if (get) return HandleListKeys(call);
      if (method == http::verb::post) return HandleCreateKey(call);
      return method_not_allowed("GET, POST");
    }
    if (seg.size() == 3) {
      if (!get) return method_not_allowed("GET");
      if (auto key = decode_key(seg[2], false)) HandleGetKey(call, std::move(*key));
      return;
    }
    if (seg.size() == 4 && seg[3] == "step") {
      if (method != http::verb::put) return method_not_allowed("PUT");
      if (auto key = decode_key(seg[2], false)) HandleSetStep(call, std::move(*key));
      return;
    }
    return not_found();
  }
  if (seg.size() == 2 && seg[0] == "admin" && seg[1] == "cache") {
    if (!get) return method_not_allowed("GET");
    return HandleCache(call);
  }
  if (seg.size() == 1 && seg[0] == "healthz") {
    if (!get) return method_not_allowed("GET");
    return HandleHealth(call);
  }
  if (seg.size() == 1 && seg[0] == "readyz") {
    if (!get) return method_not_allowed("GET");
    return HandleReady(call);
  }
  if (seg.size() == 1 && seg[0] == "metrics") {
    if (!get) return method_not_allowed("GET");
    return HandleMetrics(call);
  }
  {
    auto respond = [call](SnowflakeRoutes::Reply r) {
      call->Reply([&] {
        Response res = call->Make(r.status, r.text ? kTextType : kJsonType, std::move(r.body));
        if (!r.allow.empty()) res.set(http::field::allow, r.allow);
        return res;
      });
    };
    if (snowflake_->Handle(method, seg, call->query, PrefersText(call->req), respond)) return;
  }
  {
    auto respond = [call](http::status status, std::string json, std::string allow) {
      Response res = call->Make(status, kJsonType, std::move(json));
      if (!allow.empty()) res.set(http::field::allow, allow);
      call->Finish(std::move(res));
    };
    if (messages_->Handle(method, seg, call->query, call->req.body(), respond)) return;
  }
  return not_found();
}

void ApiRouter::HandleSeq(const std::shared_ptr<Call>& call, std::string key, bool leaf) {
  // Leaf's endpoint answers errors as bare text; ours as JSON.
  auto fail = [call, leaf](const Error& error) -> Response {
    if (leaf) return call->Make(HttpStatusFor(error.code), kTextType, PublicMessage(error));
    return call->ErrorJson(error);
  };
  // The key is validated once, by the allocator; its error comes back
  // through the callback like any other.
  int64_t count = 1;
  bool batch = false;
  if (!leaf) {
    Result<std::optional<int64_t>> n = CountParam(call->query, services_.ids.options().max_count);
    if (!n) return call->Reply([&] { return fail(n.error()); });
    if (*n) {
      count = **n;
      batch = true;
    }
  }
  const bool text = leaf || PrefersText(call->req);

  call->key = std::move(key);
  call->seq_batch = batch;
  call->seq_text = text;
  call->seq_leaf = leaf;
  // Captures one pointer so std::function needs no allocation.
  services_.ids.Take(call->key, count, [call](Result<IdBatch> result) {
    call->Reply([&]() -> Response { return SeqResponse(*call, result); });
  });
}

void ApiRouter::HandleListKeys(const std::shared_ptr<Call>& call) {
  std::string after;
  if (auto raw = call->RawParam("after")) {
    std::optional<std::string> decoded = PercentDecode(*raw, true);
    if (!decoded) {
      return call->Finish(call->ErrorJson(http::status::bad_request, "invalid_argument",
                                          "after has a malformed percent-escape"));
    }
    after = std::move(*decoded);
  }
  size_t limit = kDefaultListLimit;
  if (auto raw = call->RawParam("limit")) {
    std::optional<std::string> decoded = PercentDecode(*raw, true);
    std::optional<int64_t> n =
        decoded ? ParseBoundedInt(*decoded, 1, static_cast<int64_t>(kMaxListLimit)) : std::nullopt;
    if (!n) {
      return call->Finish(call->ErrorJson(
          http::status::bad_request, "invalid_argument",
          "limit must be an integer in [1, " + std::to_string(kMaxListLimit) + "]"));
    }
    limit = static_cast<size_t>(*n);
  }
  services_.keys.ListKeys(
      std::move(after), limit, [this, call, limit](Result<std::vector<KeyRow>> rows) {
        call->Reply([&]() -> Response {
          if (!rows) return call->ErrorJson(rows.error());
          seqd::Json keys = seqd::Json::array();
          for (const KeyRow& row : *rows) {
            keys.push_back(RowWithCacheJson(row, services_.ids));
          }
          seqd::Json j;
          j["keys"] = std::move(keys);
          j["next_after"] = rows->size() == limit && !rows->empty() ? seqd::Json(rows->back().key)
                                                                    : seqd::Json(nullptr);
          return call->JsonResponse(http::status::ok, j);
        });
      });
}

void ApiRouter::HandleGetKey(const std::shared_ptr<Call>& call, std::string key) {
  services_.keys.GetKey(std::move(key), [this, call](Result<KeyRow> row) {
    call->Reply([&]() -> Response {
      if (!row) return call->ErrorJson(row.error());
      return call->JsonResponse(http::status::ok, RowWithCacheJson(*row, services_.ids));
    });
  });
}

void ApiRouter::HandleCreateKey(const std::shared_ptr<Call>& call) {
  Result<nlohmann::json> body = ParseObject(call->req.body());
  if (!body) return call->Finish(call->ErrorJson(body.error()));
  const nlohmann::json& j = *body;

  auto key_it = j.find("key");
  if (key_it == j.end()) return call->Finish(call->ErrorJson(FieldError("key", "is required")));
  if (!key_it->is_string()) {
    return call->Finish(call->ErrorJson(FieldError("key", "must be a string")));
  }
  auto step_it = j.find("step");
  if (step_it == j.end()) return call->Finish(call->ErrorJson(FieldError("step", "is required")));
  std::optional<int64_t> step = IntField(*step_it);
  if (!step) return call->Finish(call->ErrorJson(FieldError("step", "must be an integer")));
  std::string description;
  if (auto it = j.find("description"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) {
      return call->Finish(call->ErrorJson(FieldError("description", "must be a string")));
    }
    description = it->get<std::string>();
  }

  services_.keys.CreateKey(key_it->get<std::string>(), *step, std::move(description),
                           [call](Result<KeyRow> row) {
                             call->Reply([&]() -> Response {
                               if (!row) return call->ErrorJson(row.error());
                               return call->JsonResponse(http::status::created, RowJson(*row));
                             });
                           });
}

void ApiRouter::HandleSetStep(const std::shared_ptr<Call>& call, std::string key) {
  Result<nlohmann::json> body = ParseObject(call->req.body());
  if (!body) return call->Finish(call->ErrorJson(body.error()));
  auto step_it = body->find("step");
  if (step_it == body->end()) {
    return call->Finish(call->ErrorJson(FieldError("step", "is required")));
  }
  std::optional<int64_t> step = IntField(*step_it);
  if (!step) return call->Finish(call->ErrorJson(FieldError("step", "must be an integer")));

  services_.keys.SetStep(std::move(key), *step, [call](Result<KeyRow> row) {
    call->Reply([&]() -> Response {
      if (!row) return call->ErrorJson(row.error());
      return call->JsonResponse(http::status::ok, RowJson(*row));
    });
  });
}

void ApiRouter::HandleCache(const std::shared_ptr<Call>& call) {
  call->Reply([&] {
    std::vector<KeySnapshot> snaps = services_.ids.Snapshot();
    std::sort(snaps.begin(), snaps.end(),
              [](const KeySnapshot& a, const KeySnapshot& b) { return a.key < b.key; });
    seqd::Json keys = seqd::Json::array();
    for (const KeySnapshot& s : snaps) keys.push_back(SnapshotJson(s));
    seqd::Json j;
    j["keys"] = std::move(keys);
    return call->JsonResponse(http::status::ok, j);
  });
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
    if (const SnowflakeGenerator* gen = snowflake_->generator()) in->snowflake = gen->status();
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
