// Small helpers shared by the HTTP routers: URL and query parsing, JSON
// bodies, the one error body format and errors' HTTP statuses.
//
// Thread safety: pure functions.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/percent_decode.h"  // PercentDecode, for every route file
#include "server/service/wire_errors.h"

namespace seqd {

// A plain decimal integer (digits only) within [min, max].
std::optional<int64_t> ParseBoundedInt(std::string_view text, int64_t min, int64_t max);

// The parts of `s` between `sep`s (one part if none). Room for eight inline:
// splitting a path or a short list does not allocate.
using SplitParts = boost::container::small_vector<std::string_view, 8>;
SplitParts Split(std::string_view s, char sep);

// A path split at '/', without the leading empty part, still
// percent-encoded: what the route tables match on.
using PathSegments = std::span<const std::string_view>;

// The raw (still percent-encoded) value of `name` in a query string; an
// empty view for "name" without "=".
std::optional<std::string_view> FindQueryParam(std::string_view query, std::string_view name);

// `target` (a request target: path and query) with the value of every
// access_token parameter replaced by "REDACTED": what a log line or an
// audit record may show of a target (the event routes take tokens there).
std::string RedactedTarget(std::string_view target);

// Reads an integer field of a JSON object. Values beyond int64 saturate so
// the range check downstream rejects them with its own message.
std::optional<int64_t> IntField(const nlohmann::json& j);

// The `count` query parameter of GET /seq and GET /snowflake (still
// percent-encoded in `query`): nullopt when absent; kInvalidArgument "count
// must be an integer in [1, max]" unless it is a plain decimal in that range.
Result<std::optional<int64_t>> CountParam(std::string_view query, int64_t max);

// Parses a request body as a JSON object, or explains why not.
Result<nlohmann::json> ParseObject(const std::string& body);

// kInvalidArgument "field 'name' <what>".
Error FieldError(std::string_view field, std::string_view what);

// The HTTP status of `code`, from the one table (server/service/wire_errors.h).
boost::beast::http::status HttpStatusFor(ErrorCode code);

// {"error":{"code":"...","message":"..."}}
std::string ErrorBody(std::string_view code, std::string_view message);

}  // namespace seqd
