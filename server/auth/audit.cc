#include "server/auth/audit.h"

#include <array>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/log.h"

namespace seqd {
namespace {

// Failed authentications and denials cost an attacker one request each: at
// most kFailureLinesPerSecond of them are written per second; the rest are
// counted and reported in the next line that goes out.
constexpr int kFailureLinesPerSecond = 50;

class FailureThrottle {
 public:
  // True if this failure's line may be written; `suppressed` then holds how
  // many were dropped since the last one written.
  bool Admit(uint64_t& suppressed) EXCLUDES(mu_) {
    const auto now = std::chrono::steady_clock::now();
    MutexLock lock(mu_);
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      written_ = 0;
    }
    if (written_ >= kFailureLinesPerSecond) {
      ++suppressed_;
      return false;
    }
    ++written_;
    suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  Mutex mu_;
  std::chrono::steady_clock::time_point window_start_ GUARDED_BY(mu_) = {};
  int written_ GUARDED_BY(mu_) = 0;
  uint64_t suppressed_ GUARDED_BY(mu_) = 0;
};

bool IsFailure(std::string_view outcome) {
  return outcome == "unauthenticated" || outcome == "denied";
}

}  // namespace

std::string AuditJson(const AuditEvent& e) {
  nlohmann::ordered_json j;
  j["time"] = LogTimestamp();
  j["interface"] = e.interface;
  j["token"] = e.token;
  j["peer"] = e.peer;
  j["action"] = e.action;
  j["target"] = e.target;
  j["outcome"] = e.outcome;
  if (!e.old_value.empty()) j["old"] = e.old_value;
  if (!e.new_value.empty()) j["new"] = e.new_value;
  if (!e.request_id.empty()) j["request_id"] = e.request_id;
  if (!e.trace_id.empty()) j["trace_id"] = e.trace_id;
  // Keys and ids come from clients: invalid UTF-8 is replaced, not thrown.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// One event as a log line of the current format.
void WriteAudit(const AuditEvent& e) {
  if (CurrentLogFormat() == LogFormat::kText) {
    WriteLogLine(LogLevel::kInfo, "audit " + AuditJson(e));
    return;
  }
  std::array<LogField, 11> fields;
  size_t n = 0;
  auto add = [&](std::string_view key, std::string_view value, bool always) {
    if (always || !value.empty()) fields[n++] = LogField{key, value};
  };
  add("log", "audit", true);
  add("interface", e.interface, true);
  add("token", e.token, true);
  add("peer", e.peer, true);
  add("action", e.action, true);
  add("target", e.target, true);
  add("outcome", e.outcome, true);
  add("old", e.old_value, false);
  add("new", e.new_value, false);
  add("request_id", e.request_id, false);
  add("trace_id", e.trace_id, false);
  WriteLogEvent(LogLevel::kInfo, "audit", std::span<const LogField>(fields.data(), n));
}

}  // namespace

void Audit(const AuditEvent& event) {
  if (IsFailure(event.outcome)) {
    static FailureThrottle throttle;
    uint64_t suppressed = 0;
    if (!throttle.Admit(suppressed)) return;
    if (suppressed > 0) {
      AuditEvent note;
      note.interface = event.interface;
      note.action = "audit_suppressed";
      note.outcome = "failed";
      note.new_value = std::to_string(suppressed) + " failure lines over " +
                       std::to_string(kFailureLinesPerSecond) + "/s not written";
      WriteAudit(note);
    }
  }
  WriteAudit(event);
}

}  // namespace seqd
