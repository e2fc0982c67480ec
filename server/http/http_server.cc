// HttpServer: the listener (server/net/tcp_listener.h) that makes an HTTP
// session (http_session.h) for each connection, over TLS with the holder's
// current context when TLS is on.
#include "server/http/http_server.h"

#include "server/http/http_session.h"
#include "server/net/tcp_listener.h"
#include "server/net/tls_context.h"

namespace seqd {

HttpServer::HttpServer(boost::asio::io_context& io, HttpOptions options, ApiRouter& router)
    : impl_(std::make_shared<Impl>(std::move(options), router)) {
  impl_->listener =
      MakeTcpListener(io, AcceptOptions("http", impl_->options, /*sessions_reject=*/true), impl_,
                      [](TcpListener::Socket socket, std::shared_ptr<Impl> impl) {
                        auto tls = impl->options.tls ? impl->options.tls->Current() : nullptr;
                        return MakeHttpSession(std::move(socket), std::move(tls), std::move(impl));
                      });
}

HttpServer::~HttpServer() { impl_->listener->CloseAcceptor(); }

Status HttpServer::Listen() { return impl_->listener->Listen(); }

uint16_t HttpServer::port() const { return impl_->listener->port(); }

size_t HttpServer::open_connections() const { return impl_->listener->open_connections(); }

void HttpServer::Stop(std::function<void()> drained) {
  // Held requests first: streams end after what they queued, long-polls
  // answer now, so the drain does not wait for them.
  StopHeldRequests(*impl_);
  impl_->listener->Stop(std::move(drained));
}

}  // namespace seqd
