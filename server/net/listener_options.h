// What every listener (HTTP, binary, RESP) is configured with: where it
// listens, how many connections it takes, how long a connection may idle or
// leave an answer unread, TLS, and which io_contexts run its connections.
// Each listener's own options (server/http/http_server.h,
// server/binary/binary_server.h, server/resp/resp_server.h) add what only it
// has, and set its own default port and idle timeout.
//
// Thread safety: a plain value; read by the listener at construction.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace seqd {

class IoRing;
class TlsContextHolder;

struct ListenerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (tests)
  size_t max_connections = 10000;
  size_t max_connections_per_peer = 0;     // per client IP; 0: no cap
  std::chrono::seconds idle_timeout{300};  // 0 disables the idle timeout
  // A pending write must be taken by the client within this; 0 disables it
  // (HTTP: must be positive, server/http/http_server.h).
  std::chrono::seconds write_timeout{30};
  // TLS (server/net/tls_context.h): each connection uses the holder's
  // current context; null: plain TCP (plain HTTP).
  std::shared_ptr<TlsContextHolder> tls;
  // Spreads the connections over these io_contexts (server/net/io_ring.h);
  // null: they run on the server's io_context. Not owned; must outlive the
  // server and every connection.
  IoRing* connections = nullptr;
};

}  // namespace seqd
