// Percent-decoding (RFC 3986 2.1), shared by the HTTP routes (paths and
// query strings) and the MySQL URL parser (user, password, database).
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

}  // namespace seqd
