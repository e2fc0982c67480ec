// Leveled, one-line-per-event logging to stderr.
//
// Thread safety: safe from any thread; each line is written with one call.
#pragma once

#include <atomic>
#include <sstream>
#include <string_view>

#include "common/error.h"

namespace seqd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

Result<LogLevel> ParseLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Writes "2026-11-22T14:53:58.123Z LEVEL message\n" to stderr.
void WriteLogLine(LogLevel level, std::string_view message);

// Usage: SEQD_LOG(kInfo) << "reserved " << n;  (arguments are only evaluated
// when the level is enabled)
#define SEQD_LOG(level)                               \
  if (!::seqd::LogEnabled(::seqd::LogLevel::level)) { \
  } else                                              \
    ::seqd::LogLine(::seqd::LogLevel::level).stream()

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { WriteLogLine(level_, out_.str()); }
  std::ostringstream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};

}  // namespace seqd
