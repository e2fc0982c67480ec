#include "server/base/log_format.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/utf8.h"

namespace seqd {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
constexpr std::string_view kTruncated = ",\"truncated\":true";
constexpr size_t kMaxKeyBytes = 64;

// A text-format value that needs no quotes: printable ASCII without
// quotes, backslashes or '='.
bool IsBare(std::string_view v) {
  if (v.empty()) return false;
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '=') return false;
  }
  return true;
}

// The text-format message: control characters become spaces (one event,
// one line); cut to `max` bytes at a character boundary.
void AppendTextMessage(std::string& out, std::string_view message, size_t max) {
  if (message.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
    message = message.substr(0, cut);
  }
  const size_t from = out.size();
  out.append(message);
  for (size_t i = from; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (c < 0x20 || c == 0x7f) out[i] = ' ';
  }
}

void FormatText(std::string_view time, LogLevel level, std::string_view message,
                std::span<const LogField> fields, std::string& out) {
  const size_t start = out.size();
  out.append(time).push_back(' ');
  out.append(LogLevelName(level, LogFormat::kText)).push_back(' ');
  AppendTextMessage(out, message, kMaxLogMessageBytes);
  for (const LogField& f : fields) {
    const size_t used = out.size() - start;
    // Room for " key=" and the longest value, and the newline.
    if (used + 2 + f.key.size() + kMaxLogValueBytes + 1 > kMaxLogLineBytes) break;
    out.push_back(' ');
    out.append(f.key).push_back('=');
    if (f.number || IsBare(f.value)) {
      out.append(f.value.substr(0, kMaxLogValueBytes));
    } else {
      AppendJsonString(out, f.value, kMaxLogValueBytes);
    }
  }
  out.push_back('\n');
}

void FormatJson(std::string_view time, LogLevel level, std::string_view message,
                std::span<const LogField> fields, std::string& out) {
  const size_t start = out.size();
  // Room left for what may follow, keeping space for the end: the
  // truncation mark, "}" and the newline.
  auto room = [&]() -> size_t {
    const size_t used = out.size() - start + kTruncated.size() + 2;
    return used >= kMaxLogLineBytes ? 0 : kMaxLogLineBytes - used;
  };
  bool cut = false;
  out.append("{\"time\":");
  AppendJsonString(out, time, 64);
  out.append(",\"level\":\"").append(LogLevelName(level, LogFormat::kJson)).append("\"");
  out.append(",\"message\":");
  cut |= !AppendJsonString(out, message, std::min(kMaxLogMessageBytes, room()));
  for (const LogField& f : fields) {
    const size_t mark = out.size();
    const size_t value_room = f.number ? f.value.size() : 2;
    if (room() < f.key.size() + 4 + value_room) {
      cut = true;
      break;
    }
    out.push_back(',');
    if (!AppendJsonString(out, f.key, kMaxKeyBytes + 2)) {
      out.resize(mark);  // a key is never cut: the field is left out
      cut = true;
      continue;
    }
    out.push_back(':');
    if (f.number) {
      out.append(f.value);
    } else {
      cut |= !AppendJsonString(out, f.value, std::min(kMaxLogValueBytes, room()));
    }
  }
  if (cut) out.append(kTruncated);
  out.append("}\n");
}

}  // namespace

std::string_view LogLevelName(LogLevel level, LogFormat format) {
  const bool json = format == LogFormat::kJson;
  switch (level) {
    case LogLevel::kDebug:
      return json ? "debug" : "DEBUG";
    case LogLevel::kInfo:
      return json ? "info" : "INFO";
    case LogLevel::kWarn:
      return json ? "warn" : "WARN";
    case LogLevel::kError:
      return json ? "error" : "ERROR";
  }
  return json ? "info" : "INFO";
}

std::string LogTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return stamp;
}

std::string LogValue(std::string_view v) {
  if (IsBare(v)) return std::string(v);
  std::string out;
  AppendJsonString(out, v, 6 * v.size() + 2);  // room for a \uXXXX per byte: whole
  return out;
}

bool AppendJsonString(std::string& out, std::string_view s, size_t budget) {
  const size_t limit = out.size() + budget - 1;  // the closing quote always fits
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    char escape[8];
    std::string_view piece;
    size_t used = 1;
    if (c == '"') {
      piece = "\\\"";
    } else if (c == '\\') {
      piece = "\\\\";
    } else if (c == '\n') {
      piece = "\\n";
    } else if (c == '\r') {
      piece = "\\r";
    } else if (c == '\t') {
      piece = "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      piece = std::string_view(escape, 6);
    } else if (c < 0x80) {
      // A run of plain ASCII at once.
      size_t j = i + 1;
      while (j < s.size()) {
        const auto d = static_cast<unsigned char>(s[j]);
        if (d < 0x20 || d >= 0x7f || d == '"' || d == '\\') break;
        ++j;
      }
      used = j - i;
      piece = s.substr(i, used);
      if (out.size() + piece.size() > limit) {  // as much of the run as fits
        piece = piece.substr(0, limit - out.size());
        out.append(piece);
        out.push_back('"');
        return false;
      }
    } else {
      size_t bad = 1;
      const size_t n = Utf8SequenceLength(s, i, bad);
      used = n > 0 ? n : bad;
      piece = n > 0 ? s.substr(i, n) : kReplacement;
    }
    if (out.size() + piece.size() > limit) {
      out.push_back('"');
      return false;
    }
    out.append(piece);
    i += used;
  }
  out.push_back('"');
  return true;
}

void FormatLogLine(LogFormat format, std::string_view time, LogLevel level,
                   std::string_view message, std::span<const LogField> fields, std::string& out) {
  if (format == LogFormat::kJson) {
    FormatJson(time, level, message, fields, out);
  } else {
    FormatText(time, level, message, fields, out);
  }
}

}  // namespace seqd
