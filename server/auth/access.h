// One request's rights, as every listener checks them before a service
// call (server/service/services.h): who is asking (a principal, or nobody)
// and whether it may do an operation on a key. Failures are audited
// (server/auth/audit.h) with the listener's peer address.
//
// Thread safety: a value; Check() is safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "server/auth/authenticator.h"
#include "server/base/request_id.h"

namespace seqd {

class Access;
struct AuditEvent;

// The Access of a request that presented `secret` ("" for none) to `auth`
// (null: open, everything allowed). `ids` go into its audit lines. With
// tokens on, a secret that matches no token counts against the peer's
// address (Authenticator::failures()); while that address is blocked, any
// secret gives a throttled Access (no principal, throttled() > 0) without
// being tried.
Access IdentifyBy(const Authenticator* auth, std::string_view secret, std::string_view interface,
                  std::string peer, const RequestIds& ids = {});

class Access {
 public:
  // `principal` null: the request gave no credentials (or bad ones) while
  // tokens are on. `interface` ("http", "binary", "resp") and `peer`
  // (address:port) go into audit lines.
  Access(std::shared_ptr<const Principal> principal, std::string_view interface, std::string peer);

  // OK, kUnauthenticated (no principal), kResourceExhausted (throttled:
  // ThrottledError()) or kPermissionDenied; a failure is audited as
  // `action` on `key`.
  Status Check(Permission p, std::string_view key = {}, std::string_view action = {}) const;

  const Principal* principal() const { return principal_.get(); }
  // Seconds the peer's address stays blocked for failed authentications
  // (0: not throttled). A throttled Access has no principal.
  int throttled() const { return throttled_; }
  // kResourceExhausted "too many failed authentications from this address;
  // retry in N s" (N = throttled()).
  Error ThrottledError() const;
  // After a reload of `auth`'s tokens: the same token as now loaded, or
  // none if it was removed. Cheap when nothing was reloaded (one atomic
  // load).
  void Revalidate(const Authenticator* auth);
  // The token id for audit lines ("-" open, "" none).
  std::string_view token_id() const { return principal_ ? principal_->id : std::string_view(); }
  std::string_view interface() const { return interface_; }
  const std::string& peer() const { return peer_; }
  const RequestIds& ids() const { return ids_; }

  // The audit line of a request refused for want of a token, as `action`.
  void AuditUnauthenticated(std::string_view action) const;
  // The audit line of a mutation this request made (or tried): `outcome`
  // ok or failed, with the value before and after where known.
  void AuditMutation(std::string_view action, std::string_view target, bool ok,
                     std::string old_value, std::string new_value) const;
  // `done` wrapped to audit `action` on `target` once its outcome is known.
  template <typename T, typename F>
  auto Audited(std::string_view action, std::string target, std::string new_value, F done) const {
    return [self = *this, action, target = std::move(target), new_value = std::move(new_value),
            done = std::move(done)](Result<T> r) mutable {
      self.AuditMutation(action, target, r.ok(), "", new_value);
      done(std::move(r));
    };
  }

 private:
  friend Access IdentifyBy(const Authenticator*, std::string_view, std::string_view, std::string,
                           const RequestIds&);
  // Fills the fields every audit line of this request carries.
  AuditEvent Event() const;
  std::shared_ptr<const Principal> principal_;
  std::string_view interface_;
  std::string peer_;
  uint64_t generation_ = 0;
  int throttled_ = 0;  // of the authenticator when principal_ was found
  RequestIds ids_;
};

}  // namespace seqd
