// ApiRouter: OpenIM's ID queries. GET /max_ids?key=a&key=b and
// POST /max_ids {"keys": [...]} answer {"max_ids": {"a": N, ...}}; with
// `with_time=true` (or "with_time": true in the body) also
// {"times": {"a": unix ms, ...}}, -1 for a key that has no row;
// GET /min_seqs?key=... and POST /min_seqs {"keys": [...]} answer
// {"min_seqs": {...}}; PUT /min_seqs {"min_seqs": {"a": 5}} sets them;
// GET /user_seqs?user=U&field=read&conv=a, POST /user_seqs {"user", "field",
// "convs"} and PUT /user_seqs {"user", "field", "raise_only", "seqs"} read
// and set OpenIM's per-user seqs ({"user", "field", "seqs" or "set"}). The
// POST reads exist for long lists (1000 keys do not fit a request line).
// Every key needs the `ids` scope; the calls go through services.ids.
#include <set>

#include "common/percent_decode.h"
#include "server/http/api_call.h"
#include "server/service/id_api.h"
#include "server/service/services.h"

namespace seqd {
namespace {

// The `name` parameters of a query string, decoded, in order.
Result<std::vector<std::string>> QueryKeys(std::string_view query, std::string_view name = "key") {
  std::vector<std::string> keys;
  if (query.empty()) return keys;
  for (std::string_view part : Split(query, '&')) {
    const size_t eq = part.find('=');
    if (part.substr(0, eq) != name) continue;
    std::optional<std::string> k =
        PercentDecode(eq == std::string_view::npos ? "" : part.substr(eq + 1), true);
    if (!k) {
      return MakeError(ErrorCode::kInvalidArgument,
                       std::string(name) + " has a malformed percent-escape");
    }
    keys.push_back(std::move(*k));
    if (keys.size() > kMaxKeysPerCall) break;  // TOO_LARGE, said later
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

// The array of keys `name` of a parsed body.
Result<std::vector<std::string>> KeysIn(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array()) return FieldError(name, "must be an array of keys");
  std::vector<std::string> keys;
  keys.reserve(it->size());
  for (const auto& k : *it) {
    if (!k.is_string()) return FieldError(name, "must be an array of keys");
    keys.push_back(k.get<std::string>());
  }
  return keys;
}

// {"<name>": ["a", ...]} (name "keys" unless given).
Result<std::vector<std::string>> BodyKeys(const std::string& body, const char* name = "keys") {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return j.error();
  return KeysIn(*j, name);
}

// {"<name>": {"a": 5, ...}} (name "min_seqs" unless given), a key named
// twice refused (JSON parsers keep one of them silently).
Result<std::vector<MinSeqValue>> BodyMinSeqs(const std::string& body,
                                             const char* name = "min_seqs") {
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
  auto it = j.find(name);
  if (it == j.end() || !it->is_object()) {
    return FieldError(name, "must be an object of key: seq");
  }
  if (twice) return FieldError(name, "names a key twice");
  std::vector<MinSeqValue> values;
  values.reserve(it->size());
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    std::optional<int64_t> v = IntField(kv.value());
    if (!v) return FieldError(name, "values must be integers");
    values.push_back(MinSeqValue{kv.key(), *v});
  }
  return values;
}

// The user seqs' field by its name: "min", "max" or "read".
Result<UserSeqField> FieldNamed(std::string_view name) {
  if (name == "min") return UserSeqField::kMin;
  if (name == "max") return UserSeqField::kMax;
  if (name == "read") return UserSeqField::kRead;
  return FieldError("field", "must be min, max or read");
}

const char* FieldName(UserSeqField field) {
  switch (field) {
    case UserSeqField::kMin:
      return "min";
    case UserSeqField::kMax:
      return "max";
    case UserSeqField::kRead:
      return "read";
  }
  return "read";
}

// A user seqs request: its user and field, from the query string or a body.
struct UserSeqsAsked {
  std::string user;
  UserSeqField field = UserSeqField::kRead;
};

Result<UserSeqsAsked> QueryUserSeqs(std::string_view query) {
  std::optional<std::string_view> user = FindQueryParam(query, "user");
  std::optional<std::string_view> field = FindQueryParam(query, "field");
  if (!user) return FieldError("user", "is required");
  if (!field) return FieldError("field", "is required");
  std::optional<std::string> decoded = PercentDecode(*user, true);
  if (!decoded) return FieldError("user", "has a malformed percent-escape");
  Result<UserSeqField> f = FieldNamed(*field);
  if (!f) return f.error();
  return UserSeqsAsked{std::move(*decoded), *f};
}

Result<UserSeqsAsked> BodyUserSeqs(const nlohmann::json& j) {
  auto user = j.find("user");
  auto field = j.find("field");
  if (user == j.end() || !user->is_string()) return FieldError("user", "must be a string");
  if (field == j.end() || !field->is_string()) return FieldError("field", "must be a string");
  Result<UserSeqField> f = FieldNamed(field->get<std::string>());
  if (!f) return f.error();
  return UserSeqsAsked{user->get<std::string>(), *f};
}

}  // namespace

void ApiRouter::HandleUserSeqs(const std::shared_ptr<Call>& call, bool from_query) {
  Result<UserSeqsAsked> asked = MakeError(ErrorCode::kInternal, "unset");
  Result<std::vector<std::string>> convs = std::vector<std::string>{};
  if (from_query) {
    asked = QueryUserSeqs(call->query);
    convs = QueryKeys(call->query, "conv");
  } else {
    Result<nlohmann::json> j = ParseObject(call->req.body);
    if (!j) return call->Finish(call->ErrorJson(j.error()));
    asked = BodyUserSeqs(*j);
    convs = KeysIn(*j, "convs");
  }
  if (!asked) return call->Finish(call->ErrorJson(asked.error()));
  if (!convs) return call->Finish(call->ErrorJson(convs.error()));
  for (const std::string& conv : *convs) {
    if (!call->Permit(HttpOp::kUserSeqs, conv)) return;
  }
  auto names = std::make_shared<const std::vector<std::string>>(*convs);
  const UserSeqsAsked echo = *asked;
  services_.ids.GetUserSeqs(
      asked->user, asked->field, std::move(*convs),
      [call, names, echo](Result<std::vector<int64_t>> r) {
        call->Reply([&]() -> Response {
          if (!r) return call->ErrorJson(r.error());
          Json seqs = Json::object();
          for (size_t i = 0; i < names->size() && i < r->size(); ++i) seqs[(*names)[i]] = (*r)[i];
          Json out;
          out["user"] = echo.user;
          out["field"] = FieldName(echo.field);
          out["seqs"] = std::move(seqs);
          return call->JsonResponse(http::status::ok, out);
        });
      });
}

void ApiRouter::HandleSetUserSeqs(const std::shared_ptr<Call>& call) {
  Result<nlohmann::json> j = ParseObject(call->req.body);
  if (!j) return call->Finish(call->ErrorJson(j.error()));
  Result<UserSeqsAsked> asked = BodyUserSeqs(*j);
  if (!asked) return call->Finish(call->ErrorJson(asked.error()));
  bool raise_only = false;
  if (auto it = j->find("raise_only"); it != j->end()) {
    if (!it->is_boolean()) {
      return call->Finish(call->ErrorJson(FieldError("raise_only", "must be true or false")));
    }
    raise_only = it->get<bool>();
  }
  Result<std::vector<MinSeqValue>> values = BodyMinSeqs(call->req.body, "seqs");
  if (!values) return call->Finish(call->ErrorJson(values.error()));
  std::vector<UserSeqValue> seqs;
  seqs.reserve(values->size());
  for (const MinSeqValue& v : *values) {
    if (!call->Permit(HttpOp::kUserSeqs, v.key)) return;
    seqs.push_back(UserSeqValue{v.key, v.min_seq});
  }
  auto echo = std::make_shared<const std::vector<UserSeqValue>>(seqs);
  const UserSeqsAsked who = *asked;
  services_.ids.SetUserSeqs(
      asked->user, asked->field, raise_only, std::move(seqs), [call, echo, who](Status s) {
        call->Reply([&]() -> Response {
          if (!s) return call->ErrorJson(s.error());
          Json map = Json::object();
          for (const UserSeqValue& v : *echo) map[v.conv] = v.seq;
          Json out;
          out["user"] = who.user;
          out["field"] = FieldName(who.field);
          out["set"] = std::move(map);  // the values sent: a raise may have kept larger ones
          return call->JsonResponse(http::status::ok, out);
        });
      });
}

void ApiRouter::HandleKeyValues(const std::shared_ptr<Call>& call, bool max_ids, bool from_query) {
  const HttpOp op = max_ids ? HttpOp::kMaxIds : HttpOp::kMinSeqs;
  Result<std::vector<std::string>> keys =
      from_query ? QueryKeys(call->query) : BodyKeys(call->req.body);
  if (!keys) return call->Finish(call->ErrorJson(keys.error()));
  if (keys->size() > kMaxKeysPerCall) {
    return call->Finish(call->ErrorJson(MakeError(
        ErrorCode::kTooLarge, "at most " + std::to_string(kMaxKeysPerCall) + " keys per request")));
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
  if (max_ids) return services_.ids.MaxIds(std::move(*keys), Hop::kMayForward, answer);
  services_.ids.GetMinSeqs(std::move(*keys), answer);
}

void ApiRouter::HandleMaxIdsWithTimes(const std::shared_ptr<Call>& call,
                                      std::vector<std::string> keys) {
  auto asked = std::make_shared<const std::vector<std::string>>(keys);
  services_.ids.MaxIdsWithTimes(
      std::move(keys), Hop::kMayForward, [call, asked](Result<MaxIdsTimes> r) {
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
  services_.ids.SetMinSeqs(std::move(*values), Hop::kMayForward, [call, echo](Status s) {
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
