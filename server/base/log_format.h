// How one log event becomes one line: the text and JSON shapes of
// `--log-format` (docs/operations.md, "Logs"). Pure functions; log.h writes
// what they make.
//
//   text: 2026-11-22T14:53:58.123Z WARN message key=value key="a b"
//   json: {"time":"2026-11-22T14:53:58.123Z","level":"warn","message":"message",
//          "key":"value","status":503}
//
// Whatever the input, a line is valid in its format and at most
// kMaxLogLineBytes long (newline included): JSON strings are escaped
// (quotes, backslashes, control characters) and invalid UTF-8 becomes
// U+FFFD; the message and each value are cut to a bound, and a JSON line
// that had to be cut says "truncated":true.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace seqd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kText = 0, kJson = 1 };

inline constexpr size_t kMaxLogLineBytes = 16384;
inline constexpr size_t kMaxLogMessageBytes = 8192;  // of the message as written
inline constexpr size_t kMaxLogValueBytes = 2048;    // of one field's value as written

// One structured field. `number`: the value is a decimal integer, written
// bare in JSON.
struct LogField {
  std::string_view key;
  std::string_view value;
  bool number = false;
};

// "DEBUG", "INFO", "WARN", "ERROR" (text); "debug", ... (json).
std::string_view LogLevelName(LogLevel level, LogFormat format);

// Now as RFC 3339 UTC with milliseconds: 2026-11-22T14:53:58.123Z.
std::string LogTimestamp();

// Appends `s` as a JSON string, quotes included, writing at most `budget`
// bytes (REQUIRES: budget >= 2); cut at a character boundary. Returns false
// if `s` did not fit whole.
bool AppendJsonString(std::string& out, std::string_view s, size_t budget);

// `v` for a "name=value" in a message's free text: as it is if it needs no
// quotes (printable ASCII without spaces, quotes, backslashes or '='), else
// as a JSON string, so a key such as "x code=internal" cannot pass for
// fields of its own.
std::string LogValue(std::string_view v);

// Appends one line, newline included, to `out`.
void FormatLogLine(LogFormat format, std::string_view time, LogLevel level,
                   std::string_view message, std::span<const LogField> fields, std::string& out);

}  // namespace seqd
