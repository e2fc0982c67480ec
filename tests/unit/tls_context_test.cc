// MakeTlsServerContext and TlsContextHolder with certificates made at test
// time by tests/tls/make_certs.sh (the openssl CLI).
#include "server/net/tls_context.h"

#include <doctest/doctest.h>
#include <openssl/bn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include "tests/unit/source_dir.h"

namespace seqd {
namespace {

namespace fs = std::filesystem;

// A temporary directory with make_certs.sh's files; removed at the end.
struct CertDir {
  CertDir() {
    std::string tmpl = (fs::temp_directory_path() / "seqd-tls-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    const std::string cmd = "sh " + std::string(seqd::test::kSourceDir) + "/tests/tls/make_certs.sh '" + dir.string() + "'";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "make_certs.sh failed");
  }
  ~CertDir() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string operator()(const char* name) const { return (dir / name).string(); }
  fs::path dir;
};

// The subject CN of the certificate `ctx` serves.
std::string ServedCn(const std::shared_ptr<boost::asio::ssl::context>& ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx->native_handle());
  if (!cert) return "";
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  return cn;
}

// The serial number (hex) of the certificate `ctx` serves.
std::string Serial(const std::shared_ptr<boost::asio::ssl::context>& ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx->native_handle());
  if (!cert) return "";
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr);
  char* hex = BN_bn2hex(bn);
  std::string out = hex ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

}  // namespace

TEST_CASE("tls: good files load; client_ca asks for a client certificate") {
  CertDir certs;
  auto plain = MakeTlsServerContext({certs("server.crt"), certs("server.key"), ""});
  REQUIRE_MESSAGE(plain.ok(), (plain.ok() ? "" : plain.error().message));
  CHECK(ServedCn(*plain) == "localhost");
  CHECK(SSL_CTX_get_verify_mode((*plain)->native_handle()) == SSL_VERIFY_NONE);
  CHECK(SSL_CTX_get_min_proto_version((*plain)->native_handle()) == TLS1_2_VERSION);
  CHECK((SSL_CTX_get_options((*plain)->native_handle()) & SSL_OP_NO_RENEGOTIATION) != 0);

  auto mtls = MakeTlsServerContext({certs("server.crt"), certs("server.key"), certs("ca.crt")});
  REQUIRE_MESSAGE(mtls.ok(), (mtls.ok() ? "" : mtls.error().message));
  CHECK(SSL_CTX_get_verify_mode((*mtls)->native_handle()) ==
        (SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT));
}

TEST_CASE("tls: a key that does not match the certificate is a clear error") {
  CertDir certs;
  auto r = MakeTlsServerContext({certs("server.crt"), certs("client.key"), ""});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  CHECK(r.error().message.find("does not match the certificate") != std::string::npos);
  CHECK(r.error().message.find("client.key") != std::string::npos);
}

TEST_CASE("tls: missing files and bad PEM are clear errors") {
  CertDir certs;
  auto no_cert = MakeTlsServerContext({certs("nope.crt"), certs("server.key"), ""});
  REQUIRE_FALSE(no_cert.ok());
  CHECK(no_cert.error().message.find("nope.crt") != std::string::npos);
  CHECK(no_cert.error().message.find("No such file") != std::string::npos);

  auto no_key = MakeTlsServerContext({certs("server.crt"), certs("nope.key"), ""});
  REQUIRE_FALSE(no_key.ok());
  CHECK(no_key.error().message.find("TLS key") != std::string::npos);

  auto no_ca = MakeTlsServerContext({certs("server.crt"), certs("server.key"), certs("nope.ca")});
  REQUIRE_FALSE(no_ca.ok());
  CHECK(no_ca.error().message.find("client CA") != std::string::npos);

  { std::ofstream(certs("garbage.pem")) << "not a certificate\n"; }
  auto bad_cert = MakeTlsServerContext({certs("garbage.pem"), certs("server.key"), ""});
  REQUIRE_FALSE(bad_cert.ok());
  CHECK(bad_cert.error().message.find("no PEM certificate") != std::string::npos);
  // A certificate where the key should be.
  auto bad_key = MakeTlsServerContext({certs("server.crt"), certs("server.crt"), ""});
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.error().message.find("no unencrypted PEM private key") != std::string::npos);
  auto bad_ca =
      MakeTlsServerContext({certs("server.crt"), certs("server.key"), certs("garbage.pem")});
  REQUIRE_FALSE(bad_ca.ok());
  CHECK(bad_ca.error().message.find("client CA") != std::string::npos);
}

TEST_CASE("tls: Reload swaps in new files; broken files keep the old context") {
  CertDir certs;
  // The holder's files are copies, so the test can change them.
  const std::string cert = certs("live.crt"), key = certs("live.key");
  fs::copy_file(certs("server.crt"), cert);
  fs::copy_file(certs("server.key"), key);
  auto holder = TlsContextHolder::Load({cert, key, ""});
  REQUIRE(holder.ok());
  std::shared_ptr<boost::asio::ssl::context> first = (*holder)->Current();
  REQUIRE(first);
  const std::string first_serial = Serial(first);

  // Reload from unchanged files: a new context, the same certificate.
  REQUIRE((*holder)->Reload().ok());
  CHECK((*holder)->Current() != first);
  CHECK(Serial((*holder)->Current()) == first_serial);

  // Broken: the key no longer matches. The old context stays.
  std::shared_ptr<boost::asio::ssl::context> before = (*holder)->Current();
  fs::copy_file(certs("other.crt"), cert, fs::copy_options::overwrite_existing);
  Status st = (*holder)->Reload();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("does not match") != std::string::npos);
  CHECK((*holder)->Current() == before);
  // Missing file: the same.
  fs::remove(key);
  CHECK_FALSE((*holder)->Reload().ok());
  CHECK((*holder)->Current() == before);

  // Fixed (a new certificate and its key): the reload takes it. The
  // connections that hold `first` keep it alive.
  fs::copy_file(certs("other.key"), key);
  REQUIRE((*holder)->Reload().ok());
  CHECK(Serial((*holder)->Current()) != first_serial);
  CHECK(Serial((*holder)->Current()) ==
        Serial(*MakeTlsServerContext({certs("other.crt"), certs("other.key"), ""})));
  CHECK(ServedCn(first) == "localhost");
}

TEST_CASE("tls: Load fails on bad files") {
  CertDir certs;
  auto holder = TlsContextHolder::Load({certs("server.crt"), certs("client.key"), ""});
  REQUIRE_FALSE(holder.ok());
  CHECK(holder.error().message.find("does not match") != std::string::npos);
}

}  // namespace seqd
