// A TLS front for client tests: accepts TLS connections with a given server
// context, and relays each one's bytes to a plain backend (a FakeServer),
// one backend connection per client connection. It lets the fake servers
// stay plain while the client's TLS path is tested for real.
//
// Thread safety: runs on its own thread; the counters are atomics and may
// be read from any thread.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace seqd::testing {

class TlsFront {
 public:
  TlsFront(std::shared_ptr<boost::asio::ssl::context> context, uint16_t backend_port)
      : context_(std::move(context)),
        backend_({boost::asio::ip::make_address("127.0.0.1"), backend_port}),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TlsFront() {
    io_.stop();
    thread_.join();
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string localhost_endpoint() const { return "localhost:" + std::to_string(port_); }

  std::atomic<int> handshakes{0};         // completed server-side
  std::atomic<int> failed_handshakes{0};  // refused or broken off
  // The CN of the last client certificate presented ("" for none).
  std::string last_client_cn() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_client_cn_;
  }
  // The SNI the last client sent ("" for none).
  std::string last_sni() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_sni_;
  }

 private:
  using tcp = boost::asio::ip::tcp;
  using TlsStream = boost::asio::ssl::stream<tcp::socket>;

  struct Pair : std::enable_shared_from_this<Pair> {
    Pair(tcp::socket s, boost::asio::ssl::context& ctx, boost::asio::io_context& io)
        : tls(std::move(s), ctx), plain(io) {}
    TlsStream tls;
    tcp::socket plain;
    std::array<char, 16384> up{}, down{};
    void Close() {
      boost::system::error_code ignored;
      tls.next_layer().close(ignored);
      plain.close(ignored);
    }
  };

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec) return;
      auto p = std::make_shared<Pair>(std::move(socket), *context_, io_);
      p->tls.async_handshake(
          boost::asio::ssl::stream_base::server, [this, p](const boost::system::error_code& ec) {
            if (ec) {
              ++failed_handshakes;
              return p->Close();
            }
            ++handshakes;
            Remember(p->tls.native_handle());
            p->plain.async_connect(backend_, [this, p](const boost::system::error_code& ec) {
              if (ec) return p->Close();
              Up(p);
              Down(p);
            });
          });
      Accept();
    });
  }

  void Remember(SSL* ssl) {
    std::string cn;
    if (X509* cert = SSL_get1_peer_certificate(ssl)) {
      char buf[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf));
      cn = buf;
      X509_free(cert);
    }
    const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    std::lock_guard<std::mutex> lock(mu_);
    last_client_cn_ = cn;
    last_sni_ = sni ? sni : "";
  }

  // Client (TLS) to backend (plain).
  void Up(const std::shared_ptr<Pair>& p) {
    p->tls.async_read_some(
        boost::asio::buffer(p->up), [this, p](const boost::system::error_code& ec, size_t n) {
          if (ec) return p->Close();
          boost::asio::async_write(p->plain, boost::asio::buffer(p->up.data(), n),
                                   [this, p](const boost::system::error_code& ec, size_t) {
                                     if (ec) return p->Close();
                                     Up(p);
                                   });
        });
  }

  // Backend (plain) to client (TLS).
  void Down(const std::shared_ptr<Pair>& p) {
    p->plain.async_read_some(
        boost::asio::buffer(p->down), [this, p](const boost::system::error_code& ec, size_t n) {
          if (ec) return p->Close();
          boost::asio::async_write(p->tls, boost::asio::buffer(p->down.data(), n),
                                   [this, p](const boost::system::error_code& ec, size_t) {
                                     if (ec) return p->Close();
                                     Down(p);
                                   });
        });
  }

  std::shared_ptr<boost::asio::ssl::context> context_;
  tcp::endpoint backend_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::string last_client_cn_, last_sni_;
  std::thread thread_;
};

}  // namespace seqd::testing
