// What seqctl's command files share: its two error kinds (UsageError from
// tool_flags.h, shared with seqbench), strict number parsing for arguments,
// and how times print.
#pragma once

#include <charconv>
#include <cstdio>
#include <ctime>
#include <string>

#include "tool_flags.h"

namespace seqd::tools {

// The server or the network said no: seqctl prints the message and exits 1.
struct Failure {
  std::string message;
};

// `s` as a T in [min, max], the whole string; else UsageError naming `what`.
template <typename T>
T ParseNumber(const std::string& s, const char* what, T min, T max) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) {
    throw UsageError{std::string(what) + " must be an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + s + "'"};
  }
  return v;
}

// "2026-11-22T15:14:08.589Z" for unix milliseconds >= 0.
inline std::string UtcTime(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "?";
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(unix_ms % 1000));
  return buf;
}

}  // namespace seqd::tools
