#include "server/http/routes/snowflake_routes.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "common/key_text.h"
#include "server/http/http_util.h"
#include "server/service/snowflake_api.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace http = boost::beast::http;
using Json = nlohmann::ordered_json;

namespace {

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// A UTC calendar time.
struct Civil {
  int64_t year = 1970;
  int month = 1, day = 1, hour = 0, minute = 0, second = 0, milli = 0;
};

// REQUIRES: unix_ms >= 0. Howard Hinnant's days-to-civil algorithm, in
// 64 bits so any time a layout can hold converts.
Civil ToCivil(int64_t unix_ms) {
  Civil c;
  const int64_t days = unix_ms / 86'400'000;
  int64_t ms_of_day = unix_ms % 86'400'000;
  c.milli = static_cast<int>(ms_of_day % 1000);
  ms_of_day /= 1000;
  c.second = static_cast<int>(ms_of_day % 60);
  c.minute = static_cast<int>(ms_of_day / 60 % 60);
  c.hour = static_cast<int>(ms_of_day / 3600);
  const int64_t z = days + 719468;  // days since 0000-03-01
  const int64_t era = z / 146097;
  const int64_t doe = z - era * 146097;                                       // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2 ? 1 : 0);
  return c;
}

enum class DateStyle {
  kIso,   // "2026-11-22T15:14:08.589Z"
  kLeaf,  // Leaf's "yyyy-MM-dd HH:mm:ss.SSS", here in UTC
};

// `unix_ms` as a UTC date. REQUIRES: unix_ms >= 0.
std::string FormatUtc(int64_t unix_ms, DateStyle style) {
  const Civil c = ToCivil(unix_ms);
  const char* format = style == DateStyle::kIso ? "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ"
                                                : "%04lld-%02d-%02d %02d:%02d:%02d.%03d";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, static_cast<long long>(c.year), c.month, c.day, c.hour,
                c.minute, c.second, c.milli);
  return buf;
}

SnowflakeRoutes::Reply JsonReply(http::status status, std::string body,
                                 std::string_view code = {}) {
  return SnowflakeRoutes::Reply{status, false, std::move(body), "", code};
}

// 405 for anything but GET, with Allow: GET.
SnowflakeRoutes::Reply MethodNotAllowed(http::verb method) {
  return SnowflakeRoutes::Reply{
      http::status::method_not_allowed, false,
      ErrorBody("method_not_allowed",
                "method " + std::string(http::to_string(method)) + " is not allowed here; use GET"),
      "GET", "method_not_allowed"};
}

// 404 for every snowflake path without a generator.
SnowflakeRoutes::Reply Disabled() {
  return JsonReply(http::status::not_found, ErrorBody("not_found", "snowflake IDs are disabled"),
                   "not_found");
}

SnowflakeRoutes::Reply ErrorReply(const Error& e) {
  return JsonReply(HttpStatusFor(e.code), ErrorBody(ErrorCodeName(e.code), PublicMessage(e)),
                   WireErrorFor(e.code).metric_label);
}

// The raw `text` (a path segment or a query value) as an ID of `layout`.
Result<int64_t> ParseId(std::optional<std::string> text, std::string_view what,
                        const SnowflakeLayout& layout) {
  std::optional<int64_t> id =
      text ? ParseBoundedInt(*text, 0, layout.max_id()) : std::optional<int64_t>();
  if (!id) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        std::string(what) + " must be an integer in [0, " + std::to_string(layout.max_id()) + "]");
  }
  return *id;
}

}  // namespace

std::optional<HttpOp> SnowflakeRoutes::OpFor(PathSegments seg) {
  if (seg.size() == 1 && seg[0] == "snowflake") return HttpOp::kSnowflake;
  if (seg.size() == 3 && seg[0] == "snowflake" && seg[1] == "decode") {
    return HttpOp::kSnowflakeDecode;
  }
  if (seg.size() == 4 && seg[0] == "api" && seg[1] == "snowflake" && seg[2] == "get") {
    return HttpOp::kSnowflake;
  }
  if (seg.size() == 1 && seg[0] == "decodeSnowflakeId") return HttpOp::kSnowflakeDecode;
  return std::nullopt;
}

bool SnowflakeRoutes::Handle(http::verb method, PathSegments seg, std::string_view query,
                             bool prefers_text, const Respond& respond) const {
  if (seg.size() == 2 && seg[0] == "admin" && seg[1] == "snowflake") {
    ServeAdmin(method, respond);
    return true;
  }
  if (!OpFor(seg)) return false;
  Serve(method, seg, query, prefers_text, respond);
  return true;
}

void SnowflakeRoutes::ServeAdmin(http::verb method, const Respond& respond) const {
  if (method != http::verb::get) {
    return respond(MethodNotAllowed(method));
  }
  if (generator_ == nullptr) {
    return respond(Disabled());
  }
  const SnowflakeStatus s = generator_->status();
  const SnowflakeLayout& l = generator_->layout();
  Json j;
  j["serving"] = s.serving;
  j["why_not"] = s.serving ? Json(nullptr) : Json(s.why_not);
  j["worker_id"] = s.worker_id;
  j["layout"] = {{"time_bits", l.time_bits},
                 {"worker_bits", l.worker_bits},
                 {"sequence_bits", l.sequence_bits},
                 {"epoch_ms", l.epoch_ms}};
  j["last_time_ms"] = s.last_time_ms;
  j["not_before_ms"] = s.not_before_ms;
  j["time_bound_ms"] = s.time_bound_ms;
  j["lease_left_s"] = s.lease_left_s;
  j["parked"] = s.parked;
  j["issued"] = s.issued;
  j["clock_back_waits"] = s.clock_back_waits;
  j["clock_back_refusals"] = s.clock_back_refusals;
  j["sequence_waits"] = s.sequence_waits;
  respond(JsonReply(http::status::ok, Dump(j)));
}

void SnowflakeRoutes::Serve(http::verb method, PathSegments seg, std::string_view query,
                            bool prefers_text, const Respond& respond) const {
  if (generator_ == nullptr) {
    return respond(Disabled());
  }
  if (method != http::verb::get) {
    return respond(MethodNotAllowed(method));
  }
  const SnowflakeLayout& layout = generator_->layout();

  if (seg.size() == 1 && seg[0] == "snowflake") {  // GET /snowflake[?count=N]
    Result<std::optional<int64_t>> count = CountParam(query, generator_->max_count());
    if (!count) return respond(ErrorReply(count.error()));
    return Issue(count->value_or(1), prefers_text, /*leaf=*/false, respond);
  }
  if (seg[0] == "api") {  // Leaf's GET /api/snowflake/get/{key}
    std::optional<std::string> key = PercentDecode(seg[3], /*plus_is_space=*/false);
    if (!key) {
      return respond(
          ErrorReply(MakeError(ErrorCode::kInvalidArgument, "key has a malformed percent-escape")));
    }
    if (Status valid = ValidateKeyText(*key); !valid) return respond(ErrorReply(valid.error()));
    return Issue(1, /*text=*/true, /*leaf=*/true, respond);
  }

  // The two decoders.
  const bool leaf = seg[0] == "decodeSnowflakeId";
  Result<int64_t> id = MakeError(ErrorCode::kInvalidArgument, "");
  if (leaf) {  // GET /decodeSnowflakeId?snowflakeId=N
    std::optional<std::string_view> raw = FindQueryParam(query, "snowflakeId");
    if (!raw) {
      return respond(ErrorReply(
          MakeError(ErrorCode::kInvalidArgument, "query parameter snowflakeId is required")));
    }
    id = ParseId(PercentDecode(*raw, true), "snowflakeId", layout);
  } else {  // GET /snowflake/decode/{id}
    id = ParseId(PercentDecode(seg[2], false), "id", layout);
  }
  if (!id) return respond(ErrorReply(id.error()));
  const Result<SnowflakeFields> f = generator_->Decode(*id);
  if (!f) return respond(ErrorReply(f.error()));
  Json j;
  if (leaf) {  // Leaf's shape: every value a string, the date after the millis
    j["timestamp"] =
        std::to_string(f->time_ms) + "(" + FormatUtc(f->time_ms, DateStyle::kLeaf) + ")";
    j["sequenceId"] = std::to_string(f->sequence);
    j["workerId"] = std::to_string(f->worker);
  } else {
    j["id"] = std::to_string(*id);
    j["time_ms"] = f->time_ms;
    j["time"] = FormatUtc(f->time_ms, DateStyle::kIso);
    j["worker"] = f->worker;
    j["sequence"] = f->sequence;
  }
  respond(JsonReply(http::status::ok, Dump(j)));
}

void SnowflakeRoutes::Issue(int64_t count, bool text, bool leaf, const Respond& respond) const {
  // May complete later, on the generator's timer thread: owns a copy of `respond`.
  generator_->Next(count, [respond, one = count == 1, text, leaf](Result<SnowflakeIds> r) {
    if (!r) return respond(ErrorReply(r.error()));
    const SnowflakeIds& ids = *r;
    if (ids.empty()) {
      return respond(ErrorReply(MakeError(ErrorCode::kInternal, "generator returned no IDs")));
    }
    std::string body;
    if (leaf) {
      body = std::to_string(ids.front());
    } else if (text) {
      body.reserve(ids.size() * 20);
      for (int64_t id : ids) {
        body += std::to_string(id);
        body += '\n';
      }
    } else {
      Json j;
      if (one) j["id"] = std::to_string(ids.front());
      Json list = Json::array();
      for (int64_t id : ids) list.push_back(std::to_string(id));
      j["ids"] = std::move(list);
      body = Dump(j);
    }
    respond(Reply{http::status::ok, leaf || text, std::move(body), "", ""});
  });
}

}  // namespace seqd
