// The HTTP connections of one HttpServer: what they share, and the session
// the listener makes for each accepted socket (http_session.cc). Private to
// server/http; free of Beast, so the listener's file does not compile it.
//
// Thread safety: MakeHttpSession may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "server/http/http_server.h"
#include "server/net/tcp_listener.h"
#include "server/net/unread_bytes.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace seqd {

// How long a connection we are closing may keep sending before we drop it
// (so our last bytes are not lost to a RST), and the buffer its bytes are
// read into and dropped.
inline constexpr std::chrono::seconds kHttpLingerTime{2};
inline constexpr size_t kHttpDiscardBufferBytes = 4096;

struct HttpServer::Impl {
  Impl(HttpOptions options_, ApiRouter& router_)
      : options(std::move(options_)), router(router_), unread(options.max_unread_bytes_per_peer) {}

  const HttpOptions options;
  ApiRouter& router;
  UnreadBytes unread;                     // answers written but not yet taken, per client IP
  std::shared_ptr<TcpListener> listener;  // set once, by HttpServer's constructor
};

// The session serving `socket`: over TLS with `tls` (kept alive with the
// connection), else plain (without a strand when options.single_threaded).
// nullptr (the socket closes) if the socket could not be taken off its
// strand.
// Server shutdown: the router's streams and long-polls end now
// (ApiRouter::StopStreams).
void StopHeldRequests(HttpServer::Impl& server);

std::shared_ptr<ListenedSession> MakeHttpSession(TcpListener::Socket socket,
                                                 std::shared_ptr<boost::asio::ssl::context> tls,
                                                 std::shared_ptr<HttpServer::Impl> server);

}  // namespace seqd
