// Who is asking: tokens from the tokens file (--tokens-file), each an id, the
// SHA-256 of its secret and its scopes (common/scopes.h).
//
// File format, one token per line, `#` starts a comment:
//   ID SHA256HEX SCOPE[,SCOPE...]
// e.g. `orders 9f86d0...0a08 ids:order_,snowflake`. Ids are 1-64 of
// [A-Za-z0-9_.-], unique; so are digests.
//
// Without a tokens file the authenticator is open: every request is the open
// principal, which may do everything (seqd allows that only on loopback
// listeners, or with --insecure-no-auth: server/app_options.cc).
//
// Revocation: Reload() (SIGHUP) swaps the whole set; a connection that
// authenticated earlier calls Current() before each request and loses its
// rights on the next request once its token is gone. What lives on without
// requests (subscriptions, event streams) registers OnReload() and checks
// its rights again after each reload.
//
// Thread safety: every method is safe from any thread; Authenticate() and
// Current() never block (a mutex held for a pointer copy).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "common/scopes.h"
#include "common/thread_annotations.h"
#include "common/token_digest.h"
#include "server/auth/auth_failures.h"

namespace seqd {

struct Principal {
  std::string id;  // the token's id; "-" for the open principal
  TokenDigest digest{};
  std::vector<Scope> scopes;
  bool open = false;  // no tokens configured: everything is allowed

  bool May(Permission p, std::string_view key = {}) const { return open || Allows(scopes, p, key); }
};

// The tokens of a file's text; errors name the line.
Result<std::vector<Principal>> ParseTokens(std::string_view text);

class Authenticator {
 public:
  // Open: no tokens file.
  Authenticator();
  // Reads `path` now (error if unreadable or malformed); Reload() reads it
  // again.
  static Result<std::unique_ptr<Authenticator>> FromFile(std::string path);

  // False when open.
  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Reads the file again; on an error keeps the current tokens and returns
  // the error. Open authenticators have nothing to reload.
  Status Reload() EXCLUDES(mu_);
  // Tokens loaded now.
  size_t size() const;

  // The principal of `secret`, or null if it matches no token (open: the
  // open principal, whatever the secret). Compares against every token in
  // constant time per token.
  std::shared_ptr<const Principal> Authenticate(std::string_view secret) const;
  // `p` as of the latest load: the same pointer if nothing was reloaded,
  // the reloaded token with the same secret, or null if it was removed.
  std::shared_ptr<const Principal> Current(const std::shared_ptr<const Principal>& p) const;
  // The principal of a request that gave no credentials: the open
  // principal when open, else null.
  std::shared_ptr<const Principal> Anonymous() const;
  // Grows by one on every successful load: a connection that cached a
  // principal at generation g calls Current() once it differs.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Unregisters its OnReload() callback when destroyed. A call already
  // under way may still finish after that: callbacks hold their object
  // weakly.
  class ReloadWatch {
   public:
    ReloadWatch(const Authenticator* auth, uint64_t id) : auth_(auth), id_(id) {}
    ~ReloadWatch();
    ReloadWatch(const ReloadWatch&) = delete;
    ReloadWatch& operator=(const ReloadWatch&) = delete;

   private:
    const Authenticator* auth_;
    uint64_t id_;
  };
  // Runs `fn` after every successful Reload(), on the reloading thread and
  // outside every lock of this class; `fn` must not block (post the work
  // to the owner's strand or take only short locks). The authenticator
  // must outlive the handle.
  [[nodiscard]] std::unique_ptr<ReloadWatch> OnReload(std::function<void()> fn) const
      EXCLUDES(watch_mu_);

  // The per-address budget of failed authentications IdentifyBy() keeps
  // (server/auth/auth_failures.h); used only when enabled(). Configure it
  // before serving.
  AuthFailures& failures() const { return failures_; }

 private:
  using Set = std::vector<std::shared_ptr<const Principal>>;
  std::shared_ptr<const Set> set() const EXCLUDES(mu_);

  const std::string path_;
  mutable Mutex mu_;
  std::shared_ptr<const Set> set_ GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{0};
  std::shared_ptr<const Principal> open_;
  mutable AuthFailures failures_;

  mutable Mutex watch_mu_;
  mutable uint64_t next_watch_ GUARDED_BY(watch_mu_) = 0;
  mutable std::map<uint64_t, std::shared_ptr<const std::function<void()>>> watches_
      GUARDED_BY(watch_mu_);
};

}  // namespace seqd
