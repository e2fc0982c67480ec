#include "server/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace seqd {

namespace {

namespace ssl = boost::asio::ssl;

// TLS 1.2 suites: forward secrecy and AEAD only (Mozilla's "intermediate"
// list without DHE, which would need DH parameters).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The oldest OpenSSL error queued (then clears the queue), or `fallback`.
std::string OpenSslReason(const char* fallback) {
  const unsigned long e = ERR_peek_error();  // NOLINT(runtime/int): OpenSSL's type
  std::string reason = fallback;
  if (e != 0) {
    if (const char* r = ERR_reason_error_string(e)) reason = r;
  }
  ERR_clear_error();
  return reason;
}

Error Bad(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

// kInvalidArgument naming `what` and `path` if the file cannot be opened.
Status CheckReadable(const char* what, const std::string& path) {
  if (path.empty()) return Bad(std::string("TLS ") + what + ": no file given");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Bad(std::string("TLS ") + what + " " + path + ": " + std::strerror(errno));
  std::fclose(f);
  return OkStatus();
}

// Never prompts for a pass phrase (the default callback would read the terminal).
int NoPassphrase(char*, int, int, void*) { return 0; }

Status LoadKey(SSL_CTX* ctx, const TlsFiles& files) {
  BIO* bio = BIO_new_file(files.key.c_str(), "r");
  if (!bio) return Bad("TLS key " + files.key + ": " + OpenSslReason("cannot open"));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, NoPassphrase, nullptr);
  BIO_free(bio);
  if (!pkey) {
    return Bad("TLS key " + files.key + ": no unencrypted PEM private key (" +
               OpenSslReason("unreadable") + ")");
  }
  Status st = OkStatus();
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (!cert || X509_check_private_key(cert, pkey) != 1) {
    ERR_clear_error();
    st = Bad("TLS key " + files.key + " does not match the certificate " + files.cert);
  } else if (SSL_CTX_use_PrivateKey(ctx, pkey) != 1) {
    st = Bad("TLS key " + files.key + ": " + OpenSslReason("rejected"));
  }
  EVP_PKEY_free(pkey);
  return st;
}

Status LoadClientCa(SSL_CTX* ctx, const std::string& path) {
  if (Status st = CheckReadable("client CA", path); !st) return st;
  if (SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) != 1) {
    return Bad("TLS client CA " + path + ": no PEM certificate (" + OpenSslReason("unreadable") +
               ")");
  }
  // The CA names sent in the CertificateRequest, so clients pick the right certificate.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(path.c_str());
  if (!names) return Bad("TLS client CA " + path + ": " + OpenSslReason("no certificate names"));
  SSL_CTX_set_client_CA_list(ctx, names);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return OkStatus();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeTlsServerContext(const TlsFiles& files) {
  if (Status st = CheckReadable("certificate", files.cert); !st) return st.error();
  if (Status st = CheckReadable("key", files.key); !st) return st.error();
  ERR_clear_error();
  std::shared_ptr<ssl::context> context;
  try {
    context = std::make_shared<ssl::context>(ssl::context::tls_server);
  } catch (const boost::system::system_error& e) {
    return MakeError(ErrorCode::kInternal, std::string("TLS context: ") + e.what());
  }
  SSL_CTX* ctx = context->native_handle();
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_ALL);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return MakeError(ErrorCode::kInternal, "TLS context: " + OpenSslReason("setup failed"));
  }
  // Session resumption with client certificates needs a session id context.
  static constexpr unsigned char kSessionContext[] = "seqd";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);

  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return Bad("TLS certificate " + files.cert + ": no PEM certificate (" +
               OpenSslReason("unreadable") + ")");
  }
  if (Status st = LoadKey(ctx, files); !st) return st.error();
  if (!files.client_ca.empty()) {
    if (Status st = LoadClientCa(ctx, files.client_ca); !st) return st.error();
  }
  return context;
}

Result<std::shared_ptr<TlsContextHolder>> TlsContextHolder::Load(TlsFiles files) {
  Result<std::shared_ptr<ssl::context>> first = MakeTlsServerContext(files);
  if (!first) return first.error();
  return std::make_shared<TlsContextHolder>(std::move(files), std::move(*first));
}

TlsContextHolder::TlsContextHolder(TlsFiles files, std::shared_ptr<ssl::context> first)
    : files_(std::move(files)), current_(std::move(first)) {}

std::shared_ptr<ssl::context> TlsContextHolder::Current() const {
  MutexLock lock(mu_);
  return current_;
}

Status TlsContextHolder::Reload() {
  Result<std::shared_ptr<ssl::context>> next = MakeTlsServerContext(files_);
  if (!next) return next.error();
  MutexLock lock(mu_);
  current_ = std::move(*next);
  return OkStatus();
}

}  // namespace seqd
