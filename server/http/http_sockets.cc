#include "server/http/http_sockets.h"

#include <unistd.h>

namespace seqd {

std::optional<HttpIoSocket> Unstranded(TcpListener::Socket& socket) {
  boost::system::error_code ec;
  const boost::asio::ip::tcp::endpoint local = socket.local_endpoint(ec);
  if (ec) return std::nullopt;
  boost::asio::io_context& io = socket.get_executor().get_inner_executor().context();
  const auto fd = socket.release(ec);
  if (ec) return std::nullopt;
  HttpIoSocket out(io);
  out.assign(local.protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return std::nullopt;
  }
  return out;
}

}  // namespace seqd
