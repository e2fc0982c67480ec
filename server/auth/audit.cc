#include "server/auth/audit.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/log.h"

namespace seqd {
namespace {

std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

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
  j["time"] = UtcNow();
  j["interface"] = e.interface;
  j["token"] = e.token;
  j["peer"] = e.peer;
  j["action"] = e.action;
  j["target"] = e.target;
  j["outcome"] = e.outcome;
  if (!e.old_value.empty()) j["old"] = e.old_value;
  if (!e.new_value.empty()) j["new"] = e.new_value;
  // Keys and ids come from clients: invalid UTF-8 is replaced, not thrown.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

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
      WriteLogLine(LogLevel::kInfo, "audit " + AuditJson(note));
    }
  }
  WriteLogLine(LogLevel::kInfo, "audit " + AuditJson(event));
}

}  // namespace seqd
