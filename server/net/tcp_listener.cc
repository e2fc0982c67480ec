#include "server/net/tcp_listener.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/log.h"
#include "server/net/io_ring.h"

namespace seqd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

TcpListenerOptions AcceptOptions(std::string name, const ListenerOptions& o, bool sessions_reject) {
  return TcpListenerOptions{.name = std::move(name),
                            .address = o.address,
                            .port = o.port,
                            .max_connections = o.max_connections,
                            .max_connections_per_peer = o.max_connections_per_peer,
                            .sessions_reject = sessions_reject,
                            .connections = o.connections};
}

ListenedSession::~ListenedSession() {
  if (listener_) listener_->Unregister(this);
}

void ListenedSession::HandOverTo(const std::shared_ptr<ListenedSession>& next) {
  std::shared_ptr<TcpListener> listener = std::move(listener_);
  if (!listener) return;
  if (listener->Replace(this, next)) next->Stop();
}

TcpListener::TcpListener(net::io_context& io, TcpListenerOptions options, MakeSession make_session)
    : io_(io),
      options_(std::move(options)),
      make_session_(std::move(make_session)),
      strand_(net::make_strand(io)),
      acceptor_(strand_),
      retry_timer_(strand_) {}

Status TcpListener::Listen() {
  const std::string where = options_.address + ":" + std::to_string(options_.port);
  error_code ec;
  const net::ip::address addr = net::ip::make_address(options_.address, ec);
  if (ec) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "invalid listen address '" + options_.address + "': " + ec.message());
  }
  const tcp::endpoint endpoint(addr, options_.port);
  auto fail = [&](std::string_view what) -> Status {
    error_code ignored;
    acceptor_.close(ignored);
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot " + std::string(what) + " " + where + ": " + ec.message());
  };
  if (acceptor_.open(endpoint.protocol(), ec); ec) return fail("open socket for");
  if (acceptor_.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return fail("set SO_REUSEADDR on");
  }
  if (acceptor_.bind(endpoint, ec); ec) return fail("bind");
  if (acceptor_.listen(net::socket_base::max_listen_connections, ec); ec) return fail("listen on");
  const tcp::endpoint local = acceptor_.local_endpoint(ec);
  if (ec) return fail("read the bound address of");
  port_ = local.port();
  net::post(strand_, [self = shared_from_this()] { self->DoAccept(); });
  return OkStatus();
}

void TcpListener::DoAccept() {
  if (!acceptor_.is_open()) return;
  acceptor_.async_accept(net::make_strand(ConnectionContext()),
                         [self = shared_from_this()](error_code ec, Socket socket) {
                           self->OnAccept(ec, std::move(socket));
                         });
}

void TcpListener::OnAccept(error_code ec, Socket socket) {
  if (ec) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    SEQD_LOG(kWarn) << options_.name << ": accept failed: " << ec.message();
    retry_timer_.expires_after(std::chrono::milliseconds(100));
    retry_timer_.async_wait([self = shared_from_this()](error_code timer_ec) {
      if (!timer_ec) self->DoAccept();
    });
    return;
  }
  Adopt(std::move(socket));
  DoAccept();
}

net::io_context& TcpListener::ConnectionContext() {
  return options_.connections ? options_.connections->Next() : io_;
}

void TcpListener::Adopt(Socket socket) {
  error_code ignored;
  // Sessions coalesce or frame their own writes; Nagle would only delay them.
  socket.set_option(tcp::no_delay(true), ignored);
  const tcp::endpoint remote = socket.remote_endpoint(ignored);
  std::string peer = ignored ? std::string() : remote.address().to_string();
  std::shared_ptr<ListenedSession> session = make_session_(std::move(socket));
  if (!session) return;
  bool reject = false;
  {
    MutexLock lock(mu_);
    if (stopping_) return;  // the session (and socket) dies here, unregistered
    const size_t from_peer = peer.empty() ? 0 : per_peer_[peer];
    reject =
        sessions_.size() >= options_.max_connections ||
        (options_.max_connections_per_peer > 0 && from_peer >= options_.max_connections_per_peer);
    if (peer.empty() || from_peer == 0) per_peer_.erase(peer);  // made by the lookup
    if (!reject || options_.sessions_reject) {
      session->listener_ = shared_from_this();
      if (!peer.empty()) ++per_peer_[peer];
      sessions_.emplace(session.get(), Registered{session, std::move(peer)});
    }
  }
  if (reject && !options_.sessions_reject) {
    SEQD_LOG(kDebug) << options_.name << ": too many connections; closing a new one";
    return;  // the session (and socket) dies here, unregistered
  }
  session->Start(reject);
}

Status TcpListener::Serve(int fd) {
  Socket socket(net::make_strand(ConnectionContext()));
  error_code ec;
  socket.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return MakeError(ErrorCode::kInvalidArgument, "cannot serve socket: " + ec.message());
  }
  Adopt(std::move(socket));
  return OkStatus();
}

void TcpListener::CloseAcceptor() {
  net::post(strand_, [self = shared_from_this()] {
    error_code ignored;
    self->acceptor_.close(ignored);
    self->retry_timer_.cancel();
  });
}

void TcpListener::Unregister(ListenedSession* session) {
  std::function<void()> done;
  {
    MutexLock lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    if (!it->second.peer.empty()) {
      auto p = per_peer_.find(it->second.peer);
      if (p != per_peer_.end() && --p->second == 0) per_peer_.erase(p);
    }
    sessions_.erase(it);
    if (!stopping_ || !sessions_.empty() || !drained_) return;
    done = std::move(drained_);
    drained_ = nullptr;
  }
  net::post(io_, std::move(done));  // not from inside the session's destructor
}

bool TcpListener::Replace(ListenedSession* from, const std::shared_ptr<ListenedSession>& to) {
  MutexLock lock(mu_);
  auto it = sessions_.find(from);
  if (it != sessions_.end()) {
    Registered registered{to, std::move(it->second.peer)};
    sessions_.erase(it);
    to->listener_ = shared_from_this();
    sessions_.emplace(to.get(), std::move(registered));
  }
  return stopping_;
}

size_t TcpListener::open_connections() const {
  MutexLock lock(mu_);
  return sessions_.size();
}

void TcpListener::Stop(std::function<void()> drained) {
  std::vector<std::shared_ptr<ListenedSession>> live;
  std::function<void()> done;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    if (drained) {
      if (drained_) {  // a second Stop(): run both callbacks
        drained_ = [first = std::move(drained_), second = std::move(drained)] {
          first();
          second();
        };
      } else {
        drained_ = std::move(drained);
      }
    }
    for (auto& [ptr, registered] : sessions_) {
      if (auto s = registered.session.lock()) live.push_back(std::move(s));
    }
    if (sessions_.empty() && drained_) {
      done = std::move(drained_);
      drained_ = nullptr;
    }
  }
  CloseAcceptor();
  for (auto& s : live) s->Stop();
  live.clear();  // a session may now die here; Unregister takes the lock itself
  if (done) net::post(io_, std::move(done));
}

}  // namespace seqd
