// The connection management the TCP front ends (HTTP, binary, RESP) share:
// binds and accepts (backing off after accept errors), keeps the registry of
// live sessions, enforces max_connections in all and per client address,
// adopts already-connected sockets,
// and stops: stop accepting, tell every live session to Stop(), report when
// none is left. The protocols themselves live in their sessions.
//
// Thread safety: all methods are safe from any thread. The io_context may be
// run by any number of threads; no handler blocks. With
// TcpListenerOptions::connections, each connection runs on the io_context
// the ring gives it (the acceptor stays on the listener's).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "common/mutex.h"
#include "server/net/listener_options.h"

namespace seqd {

class IoRing;
class TcpListener;

// What a session must offer the listener. A session is owned by shared_ptr
// (its own handlers keep it alive); the listener only holds a weak reference.
// Once registered, the session keeps the listener alive and unregisters
// itself when destroyed.
class ListenedSession {
 public:
  ListenedSession() = default;
  ListenedSession(const ListenedSession&) = delete;
  ListenedSession& operator=(const ListenedSession&) = delete;
  virtual ~ListenedSession();

  // Called once, right after registration, from the accepting thread. With
  // `reject` (max_connections reached; only with
  // TcpListenerOptions::sessions_reject) the session tells the client and
  // closes instead of serving.
  virtual void Start(bool reject) = 0;

  // Server shutdown: the session stops taking requests and closes once the
  // ones in flight are answered. May be called from any thread, more than
  // once, and before or after Start().
  virtual void Stop() = 0;

 protected:
  // Hands the connection to `next`, which takes this session's place among
  // the listener's sessions (and in its connection counts); this session
  // must then touch the connection no more. If the listener is stopping,
  // `next` is told to Stop(). REQUIRES: called on the connection's strand,
  // before `next` is started. Does nothing if this session is not
  // registered.
  void HandOverTo(const std::shared_ptr<ListenedSession>& next);

 private:
  friend class TcpListener;
  std::shared_ptr<TcpListener> listener_;  // set while registered
};

struct TcpListenerOptions {
  std::string name;  // prefixes log lines: "http", "binary", "resp"
  std::string address;
  uint16_t port = 0;
  size_t max_connections = 0;
  // Connections from one client address (IP, port ignored); 0: no cap.
  // Beyond it a connection is treated as over max_connections.
  size_t max_connections_per_peer = 0;
  // Beyond max_connections: true -> the session is created, registered and
  // started with reject = true; false -> the connection is closed at once.
  bool sessions_reject = false;
  // Where connections run: each accepted (or adopted) socket is bound to a
  // strand on connections->Next(); null: on the listener's io_context. Not
  // owned; must outlive the listener and every session.
  IoRing* connections = nullptr;
};

// The accept loop's part of a listener's options (`name` for its log lines).
TcpListenerOptions AcceptOptions(std::string name, const ListenerOptions& o, bool sessions_reject);

// Must be owned by a std::shared_ptr (its handlers keep it alive).
class TcpListener : public std::enable_shared_from_this<TcpListener> {
 public:
  // Every connection gets its own strand; its socket is bound to it.
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;
  // Creates the session for a connected socket; nullptr closes the socket.
  using MakeSession = std::function<std::shared_ptr<ListenedSession>(Socket socket)>;

  // `io` must outlive the listener and every session.
  TcpListener(boost::asio::io_context& io, TcpListenerOptions options, MakeSession make_session);
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // Binds and starts accepting. kInvalidArgument (bad address, address in
  // use, ...) on failure; never throws. Call once.
  Status Listen();

  // The bound port (useful with port 0); 0 before a successful Listen().
  uint16_t port() const { return port_; }

  // Serves an already-connected stream socket, taking ownership of `fd`
  // (closed on failure). Works without Listen().
  Status Serve(int fd);

  // Stops accepting (new connections and adopted sockets are closed), tells
  // every live session to Stop(). `drained` (optional) runs once, posted to
  // the io_context, when no session is left; the callbacks of several Stop()
  // calls all run.
  void Stop(std::function<void()> drained) EXCLUDES(mu_);

  // Closes the acceptor (asynchronously); sessions are untouched.
  void CloseAcceptor();

  size_t open_connections() const EXCLUDES(mu_);

 private:
  friend class ListenedSession;

  void DoAccept();
  void OnAccept(boost::system::error_code ec, Socket socket);
  // Starts a session on a connected socket (or closes it when full/stopping).
  void Adopt(Socket socket) EXCLUDES(mu_);
  void Unregister(ListenedSession* session) EXCLUDES(mu_);
  // Registers `to` in `from`'s place; true if the listener is stopping.
  bool Replace(ListenedSession* from, const std::shared_ptr<ListenedSession>& to) EXCLUDES(mu_);
  // The io_context the next connection's socket is bound to.
  boost::asio::io_context& ConnectionContext();

  boost::asio::io_context& io_;
  const TcpListenerOptions options_;
  const MakeSession make_session_;
  Strand strand_;  // serializes acceptor_ + retry_timer_
  boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, Strand> acceptor_;
  boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                    boost::asio::wait_traits<std::chrono::steady_clock>, Strand>
      retry_timer_;  // backs off after accept errors (e.g. EMFILE)
  std::atomic<uint16_t> port_{0};

  struct Registered {
    std::weak_ptr<ListenedSession> session;
    std::string peer;  // the client's IP; "" if unknown
  };
  mutable Mutex mu_;
  std::unordered_map<ListenedSession*, Registered> sessions_ GUARDED_BY(mu_);
  std::unordered_map<std::string, size_t> per_peer_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::function<void()> drained_ GUARDED_BY(mu_);
};

// A listener whose sessions belong to `owner` (the server's shared state):
// `make(socket, owner)` creates each session while `owner` lives; once it is
// gone, new connections are closed. The listener holds `owner` weakly.
template <typename Owner, typename Make>
std::shared_ptr<TcpListener> MakeTcpListener(boost::asio::io_context& io,
                                             TcpListenerOptions options,
                                             const std::shared_ptr<Owner>& owner, Make make) {
  return std::make_shared<TcpListener>(
      io, std::move(options),
      [weak = std::weak_ptr<Owner>(owner),
       make = std::move(make)](TcpListener::Socket socket) -> std::shared_ptr<ListenedSession> {
        std::shared_ptr<Owner> strong = weak.lock();
        if (!strong) return nullptr;  // the server is gone: the socket closes
        return make(std::move(socket), std::move(strong));
      });
}

}  // namespace seqd
