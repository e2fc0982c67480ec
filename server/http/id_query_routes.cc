// ApiRouter: OpenIM's ID queries. GET /max_ids?key=a&key=b and
// POST /max_ids {"keys": [...]} answer {"max_ids": {"a": N, ...}}; with
// `with_time=true` (or "with_time": true in the body) also
// {"times": {"a": unix ms, ...}}, -1 for a key that has no row;
// GET /min_seqs?key=... and POST /min_seqs {"keys": [...]} answer
// {"min_seqs": {...}}; PUT /min_seqs {"min_seqs": {"a": 5}} sets them. The
// POST reads exist for long lists (1000 keys do not fit a request line).
// Every key needs the `ids` scope; the calls go through services.router.
#include <set>

#include "common/percent_decode.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_call.h"
#include "server/route/key_router.h"
#include "server/service/services.h"

namespace seqd {
namespace {

// The `key` parameters of a query string, decoded, in order.
Result<std::vector<std::string>> QueryKeys(std::string_view query) {
  std::vector<std::string> keys;
  if (query.empty()) return keys;
  for (std::string_view part : Split(query, '&')) {
    const size_t eq = part.find('=');
    if (part.substr(0, eq) != "key") continue;
    std::optional<std::string> k =
        PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1), true);
    if (!k) return MakeError(ErrorCode::kInvalidArgument, "key has a malformed percent-escape");
    keys.push_back(std::move(*k));
    if (keys.size() > SegmentAllocator::kMaxKeysPerCall) break;  // TOO_LARGE, said later
  }
  return keys;
}

// `with_time` of a query string: true, false, or absent (false).
Result<bool> QueryWithTime(std::string_view query) {
  std::optional<std::string_view> v = FindQueryParam(query, "with_time");
  if (!v) return false;
  if (*v != "true" && *v != "false") return FieldError("with_time", "must be true or false");
  return *v == "true";
}

// `"with_time"` of a request body: a boolean, or absent (false).
Result<bool> BodyWithTime(const std::string& body) {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return j.error();
  auto it = j->find("with_time");
  if (it == j->end()) return false;
  if (!it->is_boolean()) return FieldError("with_time", "must be true or false");
  return it->get<bool>();
}

// {"keys": ["a", ...]}.
Result<std::vector<std::string>> BodyKeys(const std::string& body) {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return j.error();
  auto it = j->find("keys");
  if (it == j->end() || !it->is_array()) return FieldError("keys", "must be an array of keys");
  std::vector<std::string> keys;
  keys.reserve(it->size());
  for (const auto& k : *it) {
    if (!k.is_string()) return FieldError("keys", "must be an array of keys");
    keys.push_back(k.get<std::string>());
  }
  return keys;
}

// {"min_seqs": {"a": 5, ...}}, a key named twice refused (JSON parsers
// keep one of them silently).
Result<std::vector<MinSeqValue>> BodyMinSeqs(const std::string& body) {
  bool twice = false;
  std::set<std::string> seen;
  auto watch = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 2) {
      if (!seen.insert(parsed.get<std::string>()).second) twice = true;
    }
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(body, watch, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return MakeError(ErrorCode::kInvalidArgument, "request body is not valid JSON");
  if (!j.is_object()) {
    return MakeError(ErrorCode::kInvalidArgument, "request body must be a JSON object");
  }
  auto it = j.find("min_seqs");
  if (it == j.end() || !it->is_object()) {
    return FieldError("min_seqs", "must be an object of key: min seq");
  }
  if (twice) return FieldError("min_seqs", "names a key twice");
  std::vector<MinSeqValue> values;
  values.reserve(it->size());
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    std::optional<int64_t> v = IntField(kv.value());
    if (!v) return FieldError("min_seqs", "values must be integers");
    values.push_back(MinSeqValue{kv.key(), *v});
  }
  return values;
}

}  // namespace

void ApiRouter::HandleKeyValues(const std::shared_ptr<Call>& call, bool max_ids, bool from_query) {
  const HttpOp op = max_ids ? HttpOp::kMaxIds : HttpOp::kMinSeqs;
  Result<std::vector<std::string>> keys =
      from_query ? QueryKeys(call->query) : BodyKeys(call->req.body);
  if (!keys) return call->Finish(call->ErrorJson(keys.error()));
  if (keys->size() > SegmentAllocator::kMaxKeysPerCall) {
    return call->Finish(call->ErrorJson(MakeError(
        ErrorCode::kTooLarge,
        "at most " + std::to_string(SegmentAllocator::kMaxKeysPerCall) + " keys per request")));
  }
  for (const std::string& k : *keys) {
    if (!call->Permit(op, k)) return;
  }
  auto asked = std::make_shared<const std::vector<std::string>>(*keys);
  if (max_ids) {
    Result<bool> with_time =
        from_query ? QueryWithTime(call->query) : BodyWithTime(call->req.body);
    if (!with_time) return call->Finish(call->ErrorJson(with_time.error()));
    if (*with_time) return HandleMaxIdsWithTimes(call, std::move(*keys));
  }
  auto answer = [call, asked, max_ids](Result<std::vector<int64_t>> r) {
    call->Reply([&]() -> Response {
      if (!r) return call->ErrorJson(r.error());
      Json map = Json::object();
      for (size_t i = 0; i < asked->size() && i < r->size(); ++i) map[(*asked)[i]] = (*r)[i];
      Json out;
      out[max_ids ? "max_ids" : "min_seqs"] = std::move(map);
      return call->JsonResponse(http::status::ok, out);
    });
  };
  if (max_ids) return services_.router.MaxIds(std::move(*keys), Hop::kMayForward, answer);
  services_.router.GetMinSeqs(std::move(*keys), answer);
}

void ApiRouter::HandleMaxIdsWithTimes(const std::shared_ptr<Call>& call,
                                      std::vector<std::string> keys) {
  auto asked = std::make_shared<const std::vector<std::string>>(keys);
  services_.router.MaxIdsWithTimes(
      std::move(keys), Hop::kMayForward, [call, asked](Result<KeyRouter::MaxIdsTimes> r) {
        call->Reply([&]() -> Response {
          if (!r) return call->ErrorJson(r.error());
          Json max_ids = Json::object();
          Json times = Json::object();
          for (size_t i = 0; i < asked->size() && i < r->max_ids.size(); ++i) {
            max_ids[(*asked)[i]] = r->max_ids[i];
            times[(*asked)[i]] = r->times_ms[i];
          }
          Json out;
          out["max_ids"] = std::move(max_ids);
          out["times"] = std::move(times);
          return call->JsonResponse(http::status::ok, out);
        });
      });
}

void ApiRouter::HandleSetMinSeqs(const std::shared_ptr<Call>& call) {
  Result<std::vector<MinSeqValue>> values = BodyMinSeqs(call->req.body);
  if (!values) return call->Finish(call->ErrorJson(values.error()));
  for (const MinSeqValue& v : *values) {
    if (!call->Permit(HttpOp::kMinSeqs, v.key)) return;
  }
  auto echo = std::make_shared<const std::vector<MinSeqValue>>(*values);
  services_.router.SetMinSeqs(std::move(*values), Hop::kMayForward, [call, echo](Status s) {
    call->Reply([&]() -> Response {
      if (!s) return call->ErrorJson(s.error());
      Json map = Json::object();
      for (const MinSeqValue& v : *echo) map[v.key] = v.min_seq;
      Json out;
      out["min_seqs"] = std::move(map);
      return call->JsonResponse(http::status::ok, out);
    });
  });
}

}  // namespace seqd
