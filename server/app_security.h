// The start-time security decisions of the App (docs/security.md): which
// tokens every listener requires, whether serving without them is allowed,
// and the secret this instance presents to its cluster peers.
//
// Secure by default: without a tokens file seqd serves only if every
// listener binds a loopback address, unless insecure_no_auth is on.
//
// Thread safety: pure functions of the Config, except that LoadAuthenticator
// and ReadClusterToken read files (call them at start, not on a network
// thread).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "server/auth/authenticator.h"
#include "server/config/config.h"

namespace prometheus {
class Registry;
}

namespace seqd {

// True if `address` (as given to a listener) only accepts connections from
// this host: 127.0.0.0/8, ::1 or "localhost".
bool IsLoopbackAddress(std::string_view address);

// The tokens of tokens_file, or an open authenticator without one; its
// failure budget (auth_failure_budget) configured.
Result<std::unique_ptr<Authenticator>> LoadAuthenticator(const Config& c);

// Counts `auth`'s failed authentications (seqd_auth_failures_total) and the
// attempts refused from blocked addresses (seqd_auth_throttled_total, by
// interface) in `registry`, which must outlive `auth`. Before serving.
void CountAuthFailures(const Authenticator& auth, prometheus::Registry& registry);

// OK if the listeners may serve as configured: tokens are on, every enabled
// listener binds a loopback address, or insecure_no_auth is on. Otherwise
// an error naming the first exposed listener and the two ways out.
Status CheckExposure(const Config& c, bool tokens_enabled);

// Which listeners use TLS when a certificate is given (tls_listeners).
struct TlsListeners {
  bool http = false, admin = false, binary = false, resp = false;
};
Result<TlsListeners> ParseTlsListeners(const Config& c);

// Cluster mode with tokens: the secret in cluster_token_file (required then;
// surrounding whitespace trimmed). "" when tokens or cluster mode are off.
Result<std::string> ReadClusterToken(const Config& c, bool tokens_enabled);

}  // namespace seqd
