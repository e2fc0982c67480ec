// A binary-protocol or RESP connection's byte stream: the accepted socket,
// or TLS over it (server/net/tls_context.h). It models Asio's
// AsyncReadStream and AsyncWriteStream, so net::async_write works on it; the
// plain path costs one branch per operation.
//
// Thread safety: as the socket: use it only on the connection's strand.
// Ownership: a TLS stream keeps its ssl::context alive (a SIGHUP reload
// makes a new one for later connections only).
#pragma once

#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "server/net/tcp_listener.h"

namespace seqd {

class ConnStream {
 public:
  using Socket = TcpListener::Socket;
  using executor_type = Socket::executor_type;
  using TlsStream = boost::asio::ssl::stream<Socket>;

  // `tls` null: plain TCP.
  ConnStream(Socket socket, std::shared_ptr<boost::asio::ssl::context> tls)
      : context_(std::move(tls)) {
    if (context_) {
      tls_.emplace(std::move(socket), *context_);
    } else {
      plain_.emplace(std::move(socket));
    }
  }

  bool is_tls() const { return tls_.has_value(); }
  executor_type get_executor() { return socket().get_executor(); }
  Socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  const Socket& socket() const { return tls_ ? tls_->next_layer() : *plain_; }

  // The client's "address:port", or "" if unknown.
  std::string PeerAddress() const { return Peer(/*with_port=*/true); }
  // The client's IP address alone; "" if unknown.
  std::string PeerIp() const { return Peer(/*with_port=*/false); }

  // The TLS handshake (server side); completes at once without TLS.
  // Handler: void(boost::system::error_code).
  template <typename Handler>
  void AsyncHandshake(Handler&& handler) {
    if (tls_) {
      tls_->async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(handler));
    } else {
      std::forward<Handler>(handler)(boost::system::error_code());
    }
  }

  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    OnStream(
        [&](auto& stream) { stream.async_read_some(buffers, std::forward<Handler>(handler)); });
  }

  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    OnStream(
        [&](auto& stream) { stream.async_write_some(buffers, std::forward<Handler>(handler)); });
  }

  // Half-closes at the TCP layer (no TLS close_notify: the connection ends
  // right after, and clients treat EOF after a complete answer as the end).
  void ShutdownSend() {
    boost::system::error_code ignored;
    socket().shutdown(boost::asio::socket_base::shutdown_send, ignored);
  }

  void Close() {
    boost::system::error_code ignored;
    socket().close(ignored);
  }

 private:
  // Calls `op` with the TLS stream or the plain socket, whichever this is.
  template <typename Op>
  void OnStream(Op&& op) {
    if (tls_) {
      op(*tls_);
    } else {
      op(*plain_);
    }
  }

  std::string Peer(bool with_port) const {
    boost::system::error_code ec;
    const auto remote = socket().remote_endpoint(ec);
    if (ec) return std::string();
    std::string out = remote.address().to_string();
    if (with_port) out.append(":").append(std::to_string(remote.port()));
    return out;
  }
  std::shared_ptr<boost::asio::ssl::context> context_;  // set with TLS
  std::optional<Socket> plain_;
  std::optional<TlsStream> tls_;
};

}  // namespace seqd
