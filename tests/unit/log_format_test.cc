// Log lines in both formats: JSON escaping (quotes, control characters,
// invalid UTF-8), fields, the line bound, the text shape; SEQD_LOG's
// fields and its laziness; audit events as their own JSON objects.
#include "server/base/log_format.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/auth/audit.h"
#include "server/base/log.h"
#include "server/base/request_id.h"
#include "server/config/config.h"

namespace seqd {
namespace {

using Json = nlohmann::json;

std::string Line(LogFormat format, std::string_view message, std::vector<LogField> fields = {},
                 LogLevel level = LogLevel::kInfo) {
  std::string out;
  FormatLogLine(format, "2026-11-27T03:04:05.678Z", level, message, fields, out);
  return out;
}

// The JSON object of one line, which must end with its only newline.
Json ParseLine(const std::string& line) {
  REQUIRE(!line.empty());
  REQUIRE(line.back() == '\n');
  REQUIRE(line.find('\n') == line.size() - 1);
  return Json::parse(line.substr(0, line.size() - 1));  // throws (fails the test) if invalid
}

// What is written to stderr (fd 2) while it lives.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    saved_ = ::dup(2);
    file_ = std::tmpfile();
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    Restore();
    std::fclose(file_);
  }
  std::string Take() {
    Restore();
    std::string out;
    std::rewind(file_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) out.append(buf, n);
    return out;
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  int saved_ = -1;
  std::FILE* file_ = nullptr;
};

// The lines of `text` that contain `marker`.
std::vector<std::string> LinesWith(const std::string& text, std::string_view marker) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start + 1);
    if (line.find(marker) != std::string::npos) out.push_back(line);
    start = end + 1;
  }
  return out;
}

// Restores the process's log settings after a test changes them.
struct LogSettings {
  ~LogSettings() {
    SetLogFormat(LogFormat::kText);
    SetLogLevel(LogLevel::kInfo);
  }
};

}  // namespace

TEST_CASE("log: a JSON line has time, level, message and the fields at the top") {
  const Json j = ParseLine(Line(LogFormat::kJson, "reserved",
                                {{"request_id", "abc-1"}, {"status", "503", true}, {"peer", ""}},
                                LogLevel::kWarn));
  CHECK(j["time"] == "2026-11-27T03:04:05.678Z");
  CHECK(j["level"] == "warn");
  CHECK(j["message"] == "reserved");
  CHECK(j["request_id"] == "abc-1");
  CHECK(j["status"] == 503);  // a number, not a string
  CHECK(j["peer"] == "");
  CHECK_FALSE(j.contains("truncated"));
  CHECK(ParseLine(Line(LogFormat::kJson, "x", {}, LogLevel::kDebug))["level"] == "debug");
  CHECK(ParseLine(Line(LogFormat::kJson, "x", {}, LogLevel::kError))["level"] == "error");
}

TEST_CASE("log: JSON escapes quotes, backslashes and control characters") {
  const std::string nasty = "a\"b\\c\nd\re\tf\x01g\x1fh\x7fi";
  const std::string line = Line(LogFormat::kJson, nasty, {{"key", "\"},\"injected\":\"1"}});
  const Json j = ParseLine(line);
  CHECK(j["message"] == nasty);
  CHECK(j["key"] == "\"},\"injected\":\"1");
  CHECK_FALSE(j.contains("injected"));
  CHECK(line.find("\\u0001") != std::string::npos);
  CHECK(line.find("\\u007f") != std::string::npos);
  CHECK(line.find("\\n") != std::string::npos);
}

TEST_CASE("log: invalid UTF-8 becomes U+FFFD; valid UTF-8 is kept") {
  const std::string fffd = "\xEF\xBF\xBD";
  struct Case {
    std::string in, out;
  };
  const std::vector<Case> cases = {
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"a\xFF"
       "b",
       "a" + fffd + "b"},
      {"a\xC0\xAF"
       "b",
       "a" + fffd + fffd + "b"},  // overlong '/'
      {"a\xED\xA0\x80"
       "b",
       "a" + fffd + fffd + fffd + "b"},                 // a surrogate
      {"a\xE2\x82", "a" + fffd},                        // cut short: one replacement
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"\x80", fffd},
  };
  for (const Case& c : cases) {
    INFO(c.in);
    const Json j = ParseLine(Line(LogFormat::kJson, c.in, {{"v", c.in}}));
    CHECK(j["message"].get<std::string>() == c.out);
    CHECK(j["v"].get<std::string>() == c.out);
  }
}

TEST_CASE("log: a line is bounded; a cut JSON line is still valid and says so") {
  const std::string huge(100000, 'x');
  std::string line = Line(LogFormat::kJson, huge);
  CHECK(line.size() <= kMaxLogLineBytes);
  Json j = ParseLine(line);
  CHECK(j["truncated"] == true);
  CHECK(j["message"].get<std::string>().size() < kMaxLogMessageBytes);

  // Escapes count against the bound: each control character is six bytes.
  line = Line(LogFormat::kJson, std::string(20000, '\x01'));
  CHECK(line.size() <= kMaxLogLineBytes);
  CHECK(ParseLine(line)["truncated"] == true);

  // Many large fields: the ones that do not fit are left out.
  std::vector<LogField> fields;
  const std::string value(5000, 'v');
  const char* keys[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
  for (const char* k : keys) fields.push_back({k, value});
  line = Line(LogFormat::kJson, huge, fields);
  CHECK(line.size() <= kMaxLogLineBytes);
  j = ParseLine(line);
  CHECK(j["truncated"] == true);
  CHECK(j.contains("a"));
  CHECK(j["a"].get<std::string>().size() < kMaxLogValueBytes);

  // A cut never splits a character.
  std::string euros;
  for (int i = 0; i < 5000; ++i) euros += "\xE2\x82\xAC";
  j = ParseLine(Line(LogFormat::kJson, euros));
  const std::string kept = j["message"];
  CHECK(kept.size() % 3 == 0);
  CHECK(kept.find("\xEF\xBF\xBD") == std::string::npos);

  line = Line(LogFormat::kText, huge, fields);
  CHECK(line.size() <= kMaxLogLineBytes);
  CHECK(line.find('\n') == line.size() - 1);
}

TEST_CASE("log: the text shape: time LEVEL message key=value, one line") {
  CHECK(Line(LogFormat::kText, "started", {{"port", "8080", true}, {"peer", "10.0.0.1:5"}}) ==
        "2026-11-27T03:04:05.678Z INFO started port=8080 peer=10.0.0.1:5\n");
  // A newline in the message cannot start a forged line; odd values are quoted.
  CHECK(Line(LogFormat::kText, "a\nb\rc", {{"v", "x y\n2026 ERROR forged"}, {"e", ""}},
             LogLevel::kWarn) ==
        "2026-11-27T03:04:05.678Z WARN a b c v=\"x y\\n2026 ERROR forged\" e=\"\"\n");
}

TEST_CASE("log: SEQD_LOG writes its fields, and evaluates nothing when the level is off") {
  LogSettings restore;
  SetLogLevel(LogLevel::kInfo);
  SetLogFormat(LogFormat::kJson);
  int evaluated = 0;
  auto count = [&] {
    ++evaluated;
    return std::string("x");
  };
  StderrCapture capture;
  SEQD_LOG(kDebug).With("a", count()) << "marker-off " << count();
  RequestIds ids;
  ids.request = *RequestId::FromHeader("req-42");
  SEQD_LOG(kInfo).With(ids).With("n", 7).With("ok", true).With("s", std::string("v"))
      << "marker-on " << 5;
  const std::string out = capture.Take();
  CHECK(evaluated == 0);
  CHECK(LinesWith(out, "marker-off").empty());
  const std::vector<std::string> lines = LinesWith(out, "marker-on");
  REQUIRE(lines.size() == 1);
  const Json j = ParseLine(lines[0]);
  CHECK(j["message"] == "marker-on 5");
  CHECK(j["level"] == "info");
  CHECK(j["request_id"] == "req-42");
  CHECK_FALSE(j.contains("trace_id"));  // none given
  CHECK(j["n"] == 7);
  CHECK(j["ok"] == true);
  CHECK(j["s"] == "v");
}

TEST_CASE("log: an audit event is its own JSON object in json format, embedded in text") {
  LogSettings restore;
  AuditEvent e;
  e.interface = "http";
  e.token = "ops";
  e.peer = "10.0.0.7:51522";
  e.action = "key_step";
  e.target = "order\n\"x";
  e.outcome = "ok";
  e.old_value = "1000";
  e.new_value = "5000";
  e.request_id = "audit-marker-1";
  e.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";

  SetLogFormat(LogFormat::kJson);
  StderrCapture capture;
  Audit(e);
  std::vector<std::string> lines = LinesWith(capture.Take(), "audit-marker-1");
  REQUIRE(lines.size() == 1);
  const Json j = ParseLine(lines[0]);
  CHECK(j["message"] == "audit");
  CHECK(j["log"] == "audit");
  CHECK(j["level"] == "info");
  CHECK(j["action"] == "key_step");
  CHECK(j["target"] == "order\n\"x");
  CHECK(j["old"] == "1000");
  CHECK(j["new"] == "5000");
  CHECK(j["token"] == "ops");
  CHECK(j["request_id"] == "audit-marker-1");
  CHECK(j["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");

  SetLogFormat(LogFormat::kText);
  StderrCapture text;
  Audit(e);
  lines = LinesWith(text.Take(), "audit-marker-1");
  REQUIRE(lines.size() == 1);
  const size_t at = lines[0].find(" INFO audit {");
  REQUIRE(at != std::string::npos);
  const Json embedded = Json::parse(lines[0].substr(at + 12));
  CHECK(embedded["action"] == "key_step");
  CHECK(embedded["request_id"] == "audit-marker-1");
}

TEST_CASE("log: --log-format is text or json, from a flag or the environment") {
  auto load = [](std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "seqd");
    return LoadConfig(static_cast<int>(args.size()), args.data(), env);
  };
  auto c = load({});
  REQUIRE(c);
  CHECK(c->log_format == "text");
  c = load({"--log-format", "json"});
  REQUIRE(c);
  CHECK(c->log_format == "json");
  c = load({}, {{"SEQD_LOG_FORMAT", "json"}});
  REQUIRE(c);
  CHECK(c->log_format == "json");
  c = load({"--log-format", "xml"});
  REQUIRE_FALSE(c);
  CHECK(c.error().message.find("--log-format") != std::string::npos);
  CHECK(ParseLogFormat("json").value() == LogFormat::kJson);
  CHECK(ParseLogFormat("text").value() == LogFormat::kText);
  CHECK_FALSE(ParseLogFormat("JSON"));
}

}  // namespace seqd

TEST_CASE("log: LogValue quotes a key that could pass for fields of its own") {
  CHECK(seqd::LogValue("si_a_b") == "si_a_b");
  CHECK(seqd::LogValue("x code=internal shard=3") == "\"x code=internal shard=3\"");
  CHECK(seqd::LogValue("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(seqd::LogValue("张三") == "\"张三\"");
  CHECK(seqd::LogValue("") == "\"\"");
}
