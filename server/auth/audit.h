// The audit trail: one log line per admin mutation and per failed
// authentication or authorization, whatever the log level. With
// --log-format text, a JSON object in a text line:
//   ... INFO audit {"time":"2026-11-25T08:00:00.000Z","interface":"http",
//   "token":"ops","peer":"10.0.0.7:51522","action":"key_step","target":"order",
//   "outcome":"ok","old":"1000","new":"5000","request_id":"..."}
// With --log-format json, the line is the object, its fields at the top:
//   {"time":"...","level":"info","message":"audit","log":"audit",
//    "interface":"http","token":"ops",...}
// Successful requests are not logged one by one (metrics count them).
// Failures (unauthenticated, denied) are written at most 50 a second; the
// next one written is preceded by an `audit_suppressed` line counting the
// rest, so a flood of bad requests cannot flood the log.
//
// Thread safety: Audit() is safe from any thread (one write per line).
#pragma once

#include <string>
#include <string_view>

namespace seqd {

struct AuditEvent {
  std::string_view interface;  // http, binary, resp, config (reloads)
  std::string_view token;      // token id; "-" open; "" none given
  std::string_view peer;       // address:port
  std::string_view action;     // key_create, key_step, msg_min_seq, ..., or a permission
  std::string_view target;     // key or conversation; "" if none
  std::string_view outcome;    // ok, failed, unauthenticated, denied
  std::string old_value;       // "" if not applicable
  std::string new_value;
  std::string_view request_id;  // HTTP: the request's X-Request-Id; "" if none
  std::string_view trace_id;    // HTTP: its traceparent's trace id; "" if none
};

void Audit(const AuditEvent& event);
// The JSON object of one event in a text line (tests).
std::string AuditJson(const AuditEvent& event);

}  // namespace seqd
