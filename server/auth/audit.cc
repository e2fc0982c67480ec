#include "server/auth/audit.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "server/core/log.h"

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

void Audit(const AuditEvent& event) { WriteLogLine(LogLevel::kInfo, "audit " + AuditJson(event)); }

}  // namespace seqd
