#include "server/http/http_util.h"

#include <charconv>
#include <limits>

#include "common/request_checks.h"
#include "server/base/log.h"

namespace seqd {

std::optional<int64_t> ParseBoundedInt(std::string_view text, int64_t min, int64_t max) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

SplitParts Split(std::string_view s, char sep) {
  SplitParts parts;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::optional<std::string_view> FindQueryParam(std::string_view query, std::string_view name) {
  if (query.empty()) return std::nullopt;
  for (std::string_view part : Split(query, '&')) {
    const size_t eq = part.find('=');
    std::string_view k = part.substr(0, eq);
    if (k == name) return eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
  }
  return std::nullopt;
}

std::string RedactedTarget(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  bool first = true;
  for (std::string_view part : Split(target.substr(q + 1), '&')) {
    if (!first) out += '&';
    first = false;
    const size_t eq = part.find('=');
    if (part.substr(0, eq) == "access_token" && eq != std::string_view::npos) {
      out += "access_token=REDACTED";
    } else {
      out += part;
    }
  }
  return out;
}

std::optional<int64_t> IntField(const nlohmann::json& j) {
  if (!j.is_number_integer()) return std::nullopt;
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(v);
  }
  return j.get<int64_t>();
}

Result<nlohmann::json> ParseObject(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return MakeError(ErrorCode::kInvalidArgument, "request body is not valid JSON");
  }
  if (!j.is_object()) {
    return MakeError(ErrorCode::kInvalidArgument, "request body must be a JSON object");
  }
  return j;
}

Error FieldError(std::string_view field, std::string_view what) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "field '" + std::string(field) + "' " + std::string(what));
}

Result<std::optional<int64_t>> CountParam(std::string_view query, int64_t max) {
  std::optional<std::string_view> raw = FindQueryParam(query, "count");
  if (!raw) return std::optional<int64_t>();
  std::optional<std::string> decoded = PercentDecode(*raw, true);
  const int64_t n = decoded ? ParseCountText(*decoded) : -1;
  if (Status s = CheckCount(n, max); !s) return s.error();
  return std::optional<int64_t>(n);
}

boost::beast::http::status HttpStatusFor(ErrorCode code) {
  return static_cast<boost::beast::http::status>(WireErrorFor(code).http_status);
}

std::string ErrorBody(std::string_view code, std::string_view message) {
  nlohmann::ordered_json j;
  j["error"]["code"] = code;
  j["error"]["message"] = message;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace seqd
