// TLS for the listeners: a server context built from PEM files, and a
// holder that swaps in a context built again from the same files (SIGHUP).
//
// A listener takes Current() for each new connection and keeps that
// shared_ptr for the connection's lifetime (its ssl::stream refers to the
// context); a Reload() affects only connections accepted after it.
//
// Nothing here throws on bad input: errors are values (kInvalidArgument)
// naming the file and the reason.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/mutex.h"

namespace seqd {

struct TlsFiles {
  std::string cert;       // PEM: the server certificate, then any intermediates
  std::string key;        // PEM: its private key, unencrypted
  std::string client_ca;  // PEM CA bundle clients must present a certificate of; "" = no mTLS
};

// A TLS server context from `files`: TLS 1.2 minimum, ECDHE with AES-GCM or
// ChaCha20-Poly1305 for TLS 1.2 (OpenSSL's defaults for TLS 1.3), the
// server's cipher order, no compression, no renegotiation. With a
// client_ca, clients must present a certificate it signed (verify_peer |
// verify_fail_if_no_peer_cert). Errors: a file missing or unreadable, no
// certificate or key in its PEM, a key that does not match the certificate.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeTlsServerContext(const TlsFiles& files);

// The current server context and the files it came from.
//
// Thread safety: every method is safe to call from any thread at once.
class TlsContextHolder {
 public:
  // Builds the first context; its error if the files do not load.
  static Result<std::shared_ptr<TlsContextHolder>> Load(TlsFiles files);

  // The context for a new connection. Never null.
  std::shared_ptr<boost::asio::ssl::context> Current() const EXCLUDES(mu_);

  // Builds a new context from the same files and makes it current. On error
  // the old one stays current and the error is returned.
  Status Reload() EXCLUDES(mu_);

  const TlsFiles& files() const { return files_; }

  TlsContextHolder(TlsFiles files, std::shared_ptr<boost::asio::ssl::context> first);

 private:
  const TlsFiles files_;
  mutable Mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> current_ GUARDED_BY(mu_);
};

}  // namespace seqd
