// The client library over TLS: a TlsFront (the server's own TLS context,
// MakeTlsServerContext) in front of a plain FakeServer, with certificates
// made at test time by tests/tls/make_certs.sh.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "../fake_server.h"
#include "proto/binary_codec.h"
#include "seqd/client.h"
#include "server/net/tls_context.h"
#include "tls_front.h"

using namespace std::chrono_literals;
using seqd::client::Client;
using seqd::client::ClientOptions;
using seqd::client::StatusCode;
using seqd::testing::FakeServer;
using seqd::testing::TlsFront;

namespace {

namespace fs = std::filesystem;

// make_certs.sh's files in a temporary directory, made once for the run.
struct CertDir {
  CertDir() {
    std::string tmpl = (fs::temp_directory_path() / "seqd-client-tls-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    const std::string cmd = "sh " SEQD_SOURCE_DIR "/tests/tls/make_certs.sh '" + dir.string() + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("make_certs.sh failed");
  }
  ~CertDir() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string operator()(const char* name) const { return (dir / name).string(); }
  fs::path dir;
};

const CertDir& Certs() {
  static CertDir certs;
  return certs;
}

std::shared_ptr<boost::asio::ssl::context> ServerContext(const char* cert, const char* key,
                                                         const char* client_ca = nullptr) {
  auto ctx = seqd::MakeTlsServerContext(
      {Certs()(cert), Certs()(key), client_ca ? Certs()(client_ca) : std::string()});
  REQUIRE_MESSAGE(ctx.ok(), (ctx.ok() ? "" : ctx.error().message));
  return *ctx;
}

ClientOptions TlsOptions(const std::string& endpoint) {
  ClientOptions o;
  o.endpoints = {endpoint};
  o.call_timeout = 2000ms;
  o.connect_timeout = 1000ms;
  o.backoff_initial = 5ms;
  o.backoff_max = 20ms;
  o.max_attempts = 2;
  o.tls = true;
  o.tls_ca_file = Certs()("ca.crt");
  return o;
}

}  // namespace

TEST_CASE("tls: handshake, then calls; the server's IP and DNS names are verified") {
  FakeServer backend;
  TlsFront front(ServerContext("server.crt", "server.key"), backend.port());

  SUBCASE("IP endpoint: the IP SAN matches, no SNI") {
    Client client(TlsOptions(front.endpoint()));
    auto batch = client.NextIds("order", 3);
    REQUIRE_MESSAGE(batch.ok(), batch.ToString());
    CHECK(batch->ids() == std::vector<int64_t>{1, 2, 3});
    CHECK(client.Ping().ok());
    CHECK(front.handshakes == 1);
    CHECK(front.last_sni() == "");
  }
  SUBCASE("host name endpoint: the DNS SAN matches and is sent as SNI") {
    Client client(TlsOptions(front.localhost_endpoint()));
    auto batch = client.NextIds("order", 2);
    REQUIRE_MESSAGE(batch.ok(), batch.ToString());
    CHECK(front.last_sni() == "localhost");
  }
  SUBCASE("tls_server_name overrides the endpoint's host") {
    ClientOptions o = TlsOptions(front.endpoint());
    o.tls_server_name = "localhost";
    Client client(o);
    auto batch = client.NextIds("order", 1);
    REQUIRE_MESSAGE(batch.ok(), batch.ToString());
    CHECK(front.last_sni() == "localhost");
  }
}

TEST_CASE("tls: the AUTH frame is the first frame after the handshake") {
  FakeServer backend;
  TlsFront front(ServerContext("server.crt", "server.key"), backend.port());
  ClientOptions o = TlsOptions(front.endpoint());
  o.token = "s3cret";
  Client client(o);
  auto batch = client.NextIds("order", 1);
  REQUIRE_MESSAGE(batch.ok(), batch.ToString());
  CHECK(backend.first_opcode == static_cast<int>(seqd::proto::Opcode::kAuth));
}

TEST_CASE("tls: a server certificate from another CA is refused, nothing is sent") {
  FakeServer backend;
  TlsFront front(ServerContext("other.crt", "other.key"), backend.port());
  Client client(TlsOptions(front.endpoint()));
  auto r = client.NextIds("order", 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(r.message().find("certificate verify failed") != std::string::npos, r.message());
  CHECK_MESSAGE(r.message().find("TLS handshake with " + front.endpoint()) != std::string::npos,
                r.message());
  CHECK(front.handshakes == 0);
  CHECK(backend.next_ids_requests == 0);

  // The same server with the right CA works (the test above can fail).
  ClientOptions o = TlsOptions(front.endpoint());
  o.tls_ca_file = Certs()("other-ca.crt");
  Client good(o);
  CHECK(good.NextIds("order", 1).ok());
}

TEST_CASE("tls: a server name the certificate does not carry is refused") {
  FakeServer backend;
  TlsFront front(ServerContext("server.crt", "server.key"), backend.port());
  ClientOptions o = TlsOptions(front.endpoint());
  o.tls_server_name = "db.example.com";
  Client client(o);
  auto r = client.NextIds("order", 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(r.message().find("hostname mismatch") != std::string::npos, r.message());
  CHECK(backend.next_ids_requests == 0);

  o.tls_server_name = "127.0.0.2";  // an IP not in the certificate
  Client by_ip(o);
  auto r2 = by_ip.NextIds("order", 1);
  REQUIRE_FALSE(r2.ok());
  CHECK_MESSAGE(r2.message().find("IP address mismatch") != std::string::npos, r2.message());
}

TEST_CASE("tls: mTLS: the server asks for a client certificate") {
  FakeServer backend;
  TlsFront front(ServerContext("server.crt", "server.key", "ca.crt"), backend.port());

  SUBCASE("without one the connection is refused") {
    Client client(TlsOptions(front.endpoint()));
    auto r = client.NextIds("order", 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == StatusCode::kUnavailable);
    CHECK(front.handshakes == 0);
    CHECK(backend.next_ids_requests == 0);
  }
  SUBCASE("with one from another CA the connection is refused") {
    ClientOptions o = TlsOptions(front.endpoint());
    o.tls_cert_file = Certs()("other.crt");
    o.tls_key_file = Certs()("other.key");
    Client client(o);
    auto r = client.NextIds("order", 1);
    REQUIRE_FALSE(r.ok());
    CHECK(front.handshakes == 0);
    CHECK(backend.next_ids_requests == 0);
  }
  SUBCASE("with the client certificate it works") {
    ClientOptions o = TlsOptions(front.endpoint());
    o.tls_cert_file = Certs()("client.crt");
    o.tls_key_file = Certs()("client.key");
    Client client(o);
    auto r = client.NextIds("order", 2);
    REQUIRE_MESSAGE(r.ok(), r.ToString());
    CHECK(front.last_client_cn() == "seqd-test-client");
  }
}

TEST_CASE("tls: a plain server fails the handshake with a clear error") {
  FakeServer plain;
  Client client(TlsOptions(plain.endpoint()));
  auto r = client.NextIds("order", 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == StatusCode::kUnavailable);
  CHECK_MESSAGE(r.message().find("TLS handshake with") != std::string::npos, r.message());
  CHECK(plain.next_ids_requests == 0);
}

TEST_CASE("tls: bad options throw at construction") {
  ClientOptions o = TlsOptions("127.0.0.1:1");
  o.tls_ca_file = Certs()("missing.crt");
  CHECK_THROWS_WITH_AS(Client{o}, doctest::Contains("missing.crt"), std::invalid_argument);

  o = TlsOptions("127.0.0.1:1");
  o.tls_ca_file = Certs()("ca.key");  // not a certificate
  CHECK_THROWS_AS(Client{o}, std::invalid_argument);

  o = TlsOptions("127.0.0.1:1");
  o.tls_cert_file = Certs()("client.crt");  // no key
  CHECK_THROWS_AS(Client{o}, std::invalid_argument);

  o = TlsOptions("127.0.0.1:1");
  o.tls_cert_file = Certs()("client.crt");
  o.tls_key_file = Certs()("server.key");  // not its key
  CHECK_THROWS_WITH_AS(Client{o}, doctest::Contains("does not match"), std::invalid_argument);

  o = TlsOptions("127.0.0.1:1");
  o.tls = false;  // TLS files without TLS: never plaintext
  CHECK_THROWS_WITH_AS(Client{o}, doctest::Contains("without tls"), std::invalid_argument);
}
