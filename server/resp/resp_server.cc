// RespServer: the listener (server/net/tcp_listener.h) that makes a
// RespSession (resp_session.h) for each connection, optionally over TLS.
#include "server/resp/resp_server.h"

#include "server/net/conn_stream.h"
#include "server/net/tcp_listener.h"
#include "server/net/tls_context.h"
#include "server/resp/resp_session.h"

namespace seqd {

RespServer::RespServer(boost::asio::io_context& io, RespServerOptions options,
                       const Services& services)
    : impl_(std::make_shared<Impl>(std::move(options), services)) {
  impl_->listener = MakeTcpListener(
      io, AcceptOptions("resp", impl_->options, /*sessions_reject=*/true), impl_,
      [](TcpListener::Socket socket, std::shared_ptr<Impl> impl) {
        TcpListener::Strand strand = socket.get_executor();
        const auto& tls = impl->options.tls;
        ConnStream stream(std::move(socket), tls ? tls->Current() : nullptr);
        return std::make_shared<RespSession>(std::move(stream), std::move(strand), std::move(impl));
      });
}

RespServer::~RespServer() { impl_->listener->CloseAcceptor(); }

Status RespServer::Listen() { return impl_->listener->Listen(); }

uint16_t RespServer::port() const { return impl_->listener->port(); }

size_t RespServer::open_connections() const { return impl_->listener->open_connections(); }

void RespServer::Stop(std::function<void()> drained) { impl_->listener->Stop(std::move(drained)); }

}  // namespace seqd
