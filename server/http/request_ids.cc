#include "server/http/request_ids.h"

#include <boost/beast/http/field.hpp>
#include <nlohmann/json.hpp>

namespace seqd {

namespace http = boost::beast::http;

RequestIds RequestIdsOf(const HttpRequest& req) {
  RequestIds ids;
  std::optional<RequestId> given;
  if (!req.x_request_id.empty()) given = RequestId::FromHeader(req.x_request_id);
  ids.request = given ? *given : RequestIdGenerator::Process().Next();
  if (!req.traceparent.empty()) {
    if (std::optional<TraceId> trace = TraceId::FromTraceparent(req.traceparent)) {
      ids.trace = *trace;
    }
  }
  return ids;
}

void StampRequestId(HttpResponse& res, std::string_view id) {
  res.set("X-Request-Id", boost::beast::string_view(id.data(), id.size()));
  std::string& body = res.body();
  constexpr std::string_view kErrorStart = R"({"error":{)";
  if (res.result_int() < 400 || !std::string_view(body).starts_with(kErrorStart)) return;
  // Quotes inside JSON strings are escaped: this is the member itself.
  if (body.find(R"("request_id":)") != std::string::npos) return;
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return;
  j["error"]["request_id"] = id;
  body = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (res.has_content_length()) res.content_length(body.size());
}

}  // namespace seqd
