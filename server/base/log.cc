#include "server/base/log.h"

#include <atomic>
#include <cstdio>

#include "server/base/request_id.h"

namespace seqd {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};
}  // namespace

Result<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return MakeError(ErrorCode::kInvalidArgument, "expected one of debug, info, warn, error");
}

Result<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return MakeError(ErrorCode::kInvalidArgument, "expected text or json");
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
void SetLogFormat(LogFormat format) { g_format = static_cast<int>(format); }
LogFormat CurrentLogFormat() {
  return static_cast<LogFormat>(g_format.load(std::memory_order_relaxed));
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void WriteLogEvent(LogLevel level, std::string_view message, std::span<const LogField> fields) {
  std::string line;
  line.reserve(message.size() + 64 + fields.size() * 32);
  FormatLogLine(CurrentLogFormat(), LogTimestamp(), level, message, fields, line);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

LogLine& LogLine::Add(std::string_view key, std::string_view value, bool number) {
  if (field_count_ == kMaxFields) return *this;
  const size_t room = kMaxLogValueBytes + 1;  // enough to be cut by the formatter
  const std::string_view kept = value.substr(0, room);
  fields_[field_count_++] =
      Field{key, static_cast<uint32_t>(values_.size()), static_cast<uint32_t>(kept.size()), number};
  values_.append(kept);
  return *this;
}

LogLine& LogLine::With(const RequestIds& ids) {
  if (!ids.request.empty()) With("request_id", ids.request.view());
  if (!ids.trace.empty()) With("trace_id", ids.trace.view());
  return *this;
}

LogLine::~LogLine() {
  std::array<LogField, kMaxFields> fields;
  for (size_t i = 0; i < field_count_; ++i) {
    const Field& f = fields_[i];
    fields[i] = LogField{f.key, std::string_view(values_).substr(f.offset, f.size), f.number};
  }
  WriteLogEvent(level_, out_.str(), std::span<const LogField>(fields.data(), field_count_));
}

}  // namespace seqd
