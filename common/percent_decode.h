// Percent-decoding and -encoding (RFC 3986 2.1), shared by the HTTP routes
// (paths, query strings, Location headers, SSE resume tokens) and the MySQL
// URL parser (user, password, database).
//
// Thread safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace seqd {

// `in` with every %XX replaced by its byte (and '+' by a space when
// `plus_is_space`, as form-encoded query strings mean it); nullopt on a
// malformed escape (a '%' not followed by two hex digits).
std::optional<std::string> PercentDecode(std::string_view in, bool plus_is_space);

// `in` with every byte but A-Z a-z 0-9 _ - . : @ written as %XX (upper-case
// hex): safe in a path segment, a query value and a comma or '=' separated
// list. PercentDecode(PercentEncode(s), false) == s for any bytes.
std::string PercentEncode(std::string_view in);

}  // namespace seqd
