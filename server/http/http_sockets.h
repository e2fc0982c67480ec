// The sockets an HTTP session (http_session.cc) runs over. Private to
// server/http.
//
// Thread safety: Unstranded() is called once per socket, on its strand.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <optional>

#include "server/net/tcp_listener.h"

namespace seqd {

// Bound to the io_context itself: when a single thread runs it, that thread
// is the connection's strand, and a real strand only costs.
using HttpIoSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

// The same connection as an HttpIoSocket; nullopt if the descriptor cannot
// be moved (`socket` is then left as it was or closed).
std::optional<HttpIoSocket> Unstranded(TcpListener::Socket& socket);

}  // namespace seqd
