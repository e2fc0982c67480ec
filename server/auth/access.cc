#include "server/auth/access.h"

#include "server/auth/audit.h"

namespace seqd {

Access::Access(std::shared_ptr<const Principal> principal, std::string_view interface,
               std::string peer)
    : principal_(std::move(principal)), interface_(interface), peer_(std::move(peer)) {}

Access IdentifyBy(const Authenticator* auth, std::string_view secret, std::string_view interface,
                  std::string peer, const RequestIds& ids) {
  static const Authenticator kOpen;
  const Authenticator& a = auth ? *auth : kOpen;
  const bool attempt = a.enabled() && !secret.empty();
  if (attempt) {
    if (const int blocked = a.failures().BlockedFor(peer); blocked > 0) {
      // Not tried: a blocked address learns nothing, right secret or not.
      Access access(nullptr, interface, std::move(peer));
      access.generation_ = a.generation();
      access.ids_ = ids;
      access.throttled_ = blocked;
      a.failures().CountThrottled(interface);
      return access;
    }
  }
  std::shared_ptr<const Principal> p = a.Authenticate(secret);
  const bool failed = !p && !secret.empty();
  Access access(std::move(p), interface, std::move(peer));
  access.generation_ = a.generation();
  access.ids_ = ids;
  if (failed) {
    AuditEvent e = access.Event();
    e.action = "authenticate";
    e.outcome = "unauthenticated";
    Audit(e);
    if (attempt && a.failures().RecordFailure(access.peer_)) {
      // Once per block: the audit trail's own cap (50 lines a second)
      // bounds these too.
      e.action = "auth_throttled";
      e.outcome = "denied";
      Audit(e);
    }
  }
  return access;
}

void Access::Revalidate(const Authenticator* auth) {
  if (!auth || !principal_ || principal_->open) return;
  const uint64_t now = auth->generation();
  if (now == generation_) return;
  principal_ = auth->Current(principal_);
  generation_ = now;
}

AuditEvent Access::Event() const {
  AuditEvent e;
  e.interface = interface_;
  e.token = token_id();
  e.peer = peer_;
  e.request_id = ids_.request.view();
  e.trace_id = ids_.trace.view();
  return e;
}

void Access::AuditUnauthenticated(std::string_view action) const {
  AuditEvent e = Event();
  e.action = action;
  e.outcome = "unauthenticated";
  Audit(e);
}

void Access::AuditMutation(std::string_view action, std::string_view target, bool ok,
                           std::string old_value, std::string new_value) const {
  AuditEvent e = Event();
  e.action = action;
  e.target = target;
  e.outcome = ok ? "ok" : "failed";
  e.old_value = std::move(old_value);
  e.new_value = std::move(new_value);
  Audit(e);
}

Error Access::ThrottledError() const {
  return MakeError(ErrorCode::kResourceExhausted,
                   "too many failed authentications from this address; retry in " +
                       std::to_string(throttled_) + " s");
}

Status Access::Check(Permission p, std::string_view key, std::string_view action) const {
  if (principal_ && principal_->May(p, key)) return OkStatus();
  // Counted, and audited when the block began: not one line per refusal.
  if (throttled_ > 0) return ThrottledError();
  AuditEvent e = Event();
  e.action = action.empty() ? PermissionName(p) : action;
  e.target = key;
  if (!principal_) {
    e.outcome = "unauthenticated";
    Audit(e);
    return MakeError(ErrorCode::kUnauthenticated, "a token is required");
  }
  e.outcome = "denied";
  Audit(e);
  std::string what =
      "token " + principal_->id + " has no " + std::string(PermissionName(p)) + " scope";
  if (!key.empty()) what += " for this key";
  return MakeError(ErrorCode::kPermissionDenied, what);
}

}  // namespace seqd
