// Leveled, one-line-per-event logging to stderr, as text or as JSON lines
// (`--log-format`; the shapes are in log_format.h).
//
// Thread safety: safe from any thread; each line is written with one call.
// SetLogLevel() and SetLogFormat() may be called at any time (main() calls
// them once, before any other thread runs).
#pragma once

#include <array>
#include <charconv>
#include <concepts>
#include <cstdint>
#include <ios>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/error.h"
#include "server/base/log_format.h"

namespace seqd {

struct RequestIds;  // server/base/request_id.h

Result<LogLevel> ParseLogLevel(std::string_view name);
// "text" or "json".
Result<LogFormat> ParseLogFormat(std::string_view name);
void SetLogLevel(LogLevel level);
void SetLogFormat(LogFormat format);
LogFormat CurrentLogFormat();
bool LogEnabled(LogLevel level);
// Writes one event with its fields now, whatever the level.
void WriteLogEvent(LogLevel level, std::string_view message, std::span<const LogField> fields);
inline void WriteLogLine(LogLevel level, std::string_view message) {
  WriteLogEvent(level, message, {});
}

// Usage:
//   SEQD_LOG(kInfo) << "reserved " << n;
//   SEQD_LOG(kWarn).With("request_id", id).With("status", 503) << "request failed";
// Nothing after SEQD_LOG(level) is evaluated when the level is off.
#define SEQD_LOG(level)                               \
  if (!::seqd::LogEnabled(::seqd::LogLevel::level)) { \
  } else                                              \
    ::seqd::LogLine(::seqd::LogLevel::level)

// One event being built; written when destroyed. Not thread safe (a
// temporary of one statement).
class LogLine {
 public:
  static constexpr size_t kMaxFields = 16;  // more are left out

  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  // Adds a field. `key` must outlive the line (a string literal): a short
  // identifier, not time, level, message or truncated. The value is copied.
  LogLine& With(std::string_view key, std::string_view value) {
    return Add(key, value, /*number=*/false);
  }
  LogLine& With(std::string_view key, const char* value) {
    return With(key, std::string_view(value));
  }
  LogLine& With(std::string_view key, const std::string& value) {
    return With(key, std::string_view(value));
  }
  template <std::integral T>
  LogLine& With(std::string_view key, T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return Add(key, value ? "true" : "false", /*number=*/true);
    } else {
      char digits[24];
      const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
      return Add(key, std::string_view(digits, static_cast<size_t>(end - digits)), true);
    }
  }

  // A request's ids: request_id, and trace_id when it has one.
  LogLine& With(const RequestIds& ids);

  template <typename T>
  LogLine& operator<<(const T& value) {
    out_ << value;
    return *this;
  }
  LogLine& operator<<(std::ostream& (*manipulator)(std::ostream&)) {
    out_ << manipulator;
    return *this;
  }
  LogLine& operator<<(std::ios_base& (*manipulator)(std::ios_base&)) {
    out_ << manipulator;
    return *this;
  }
  std::ostringstream& stream() { return out_; }

 private:
  struct Field {
    std::string_view key;
    uint32_t offset = 0, size = 0;  // in values_
    bool number = false;
  };
  LogLine& Add(std::string_view key, std::string_view value, bool number);

  LogLevel level_;
  std::ostringstream out_;
  std::string values_;
  std::array<Field, kMaxFields> fields_{};
  size_t field_count_ = 0;
};

}  // namespace seqd
