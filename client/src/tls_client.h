// TLS on the client side, shared by the client library's transport and the
// tools (seqctl's HTTP path, seqbench): the client context and the per-
// connection peer name. Internal to the client library and its tools.
//
// Thread safety: a context is built once and only read afterwards (OpenSSL
// allows SSL_new from many threads on one SSL_CTX); the functions on an SSL
// must be called from the thread that owns that connection.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>

namespace seqd::client::detail {

// A TLS client context: TLS 1.2 minimum, no compression, the server's
// certificate verified against `ca_file` (PEM; "" = OpenSSL's default
// paths, the system's CAs), and `cert_file` + `key_file` (PEM) presented
// when the server asks for a client certificate (mTLS; both or neither).
// Throws std::invalid_argument naming the file and the reason.
std::shared_ptr<boost::asio::ssl::context> MakeTlsClientContext(const std::string& ca_file,
                                                                const std::string& cert_file,
                                                                const std::string& key_file);

// Before the handshake of `ssl`: the name the server's certificate must
// match (an IP literal is matched against the IP SANs, a host name against
// the DNS SANs) and, if it is a host name, the SNI sent. False (and `error`)
// if OpenSSL refuses the name.
bool SetTlsPeerName(SSL* ssl, const std::string& name, std::string& error);

// Why a TLS handshake (or a read or write on it) failed: the certificate
// verification error if the server's certificate was refused ("certificate
// verify failed: hostname mismatch"), else the error's own text.
std::string TlsFailureReason(const SSL* ssl, const boost::system::error_code& ec);

}  // namespace seqd::client::detail
