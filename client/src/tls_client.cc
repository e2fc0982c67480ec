#include "tls_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace seqd::client::detail {

namespace ssl = boost::asio::ssl;

namespace {

std::string OpenSslReason() {
  const unsigned long e = ERR_peek_error();  // NOLINT(runtime/int): OpenSSL's type
  const char* r = e != 0 ? ERR_reason_error_string(e) : nullptr;
  ERR_clear_error();
  return r ? r : "unreadable";
}

[[noreturn]] void Throw(const std::string& what, const std::string& path, const std::string& why) {
  throw std::invalid_argument("seqd client: TLS " + what + " '" + path + "': " + why);
}

void CheckReadable(const char* what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) Throw(what, path, std::strerror(errno));
  std::fclose(f);
}

int NoPassphrase(char*, int, int, void*) { return 0; }

}  // namespace

std::shared_ptr<ssl::context> MakeTlsClientContext(const std::string& ca_file,
                                                   const std::string& cert_file,
                                                   const std::string& key_file) {
  if (cert_file.empty() != key_file.empty()) {
    throw std::invalid_argument(
        "seqd client: a TLS client certificate needs both the certificate and the key file");
  }
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_default_passwd_cb(ctx, NoPassphrase);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      throw std::invalid_argument("seqd client: TLS: the system's CA paths: " + OpenSslReason());
    }
  } else {
    CheckReadable("CA file", ca_file);
    if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
      Throw("CA file", ca_file, "no PEM certificate (" + OpenSslReason() + ")");
    }
  }
  if (!cert_file.empty()) {
    CheckReadable("certificate", cert_file);
    CheckReadable("key", key_file);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
      Throw("certificate", cert_file, "no PEM certificate (" + OpenSslReason() + ")");
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      const unsigned long e = ERR_peek_error();  // NOLINT(runtime/int): OpenSSL's type
      if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
        ERR_clear_error();
        Throw("key", key_file, "does not match the certificate '" + cert_file + "'");
      }
      Throw("key", key_file, "no unencrypted PEM private key (" + OpenSslReason() + ")");
    }
  }
  return context;
}

bool SetTlsPeerName(SSL* ssl, const std::string& name, std::string& error) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  const bool is_ip = !ec;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  // OpenSSL checks the name during the handshake (X509_V_ERR_HOSTNAME_MISMATCH
  // or X509_V_ERR_IP_ADDRESS_MISMATCH), so the reason is in the verify result.
  const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  // SNI carries host names only (RFC 6066), never an address.
  if (ok != 1 || (!is_ip && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1)) {
    error = "TLS: cannot use server name '" + name + "': " + OpenSslReason();
    return false;
  }
  return true;
}

std::string TlsFailureReason(const SSL* ssl, const boost::system::error_code& ec) {
  const long verify = SSL_get_verify_result(ssl);  // NOLINT(runtime/int): OpenSSL's type
  if (verify != X509_V_OK) {
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  if (ec == ssl::error::stream_truncated) return "connection closed during the TLS handshake";
  return ec.message();
}

}  // namespace seqd::client::detail
