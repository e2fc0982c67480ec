// AsyncClient's transport: the endpoints and their failover (backoff while
// marked down), one connection per endpoint (resolve, connect, TLS
// handshake), writing frames and reading them back. What a frame means for
// a call or a subscription is async_client_requests.cc's and
// async_client_subscriptions.cc's. On the strand (async_client_impl.h).
#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "async_client_impl.h"
#include "tls_client.h"

namespace seqd::client {

namespace {

constexpr size_t kReadChunk = 64 * 1024;

// Spreads the clients of a process over the endpoints: each starts at the next.
std::atomic<size_t> g_round_robin{0};

}  // namespace

AsyncClient::Impl::Impl(asio::any_io_executor executor, ClientOptions opts)
    : strand(asio::make_strand(std::move(executor))),
      options(std::move(opts)),
      attempt_cap(options.max_attempts > 0 ? options.max_attempts
                                           : std::numeric_limits<int>::max()),
      watch_placement(options.watch_placement || options.route_by_shard ||
                      static_cast<bool>(options.placement_version)),
      rng(std::random_device{}()) {
  if (options.endpoints.empty()) throw std::invalid_argument("seqd client: no endpoints");
  for (const std::string& name : options.endpoints) {
    Endpoint ep;
    if (!SplitEndpoint(name, ep.host, ep.port)) {
      throw std::invalid_argument("seqd client: endpoint '" + name +
                                  "' is not host:port or [v6addr]:port");
    }
    ep.name = name;
    endpoints.push_back(std::move(ep));
  }
  if (options.max_attempts < 0) throw std::invalid_argument("seqd client: max_attempts < 0");
  if (options.token.size() > proto::kMaxAuthSecret) {
    throw std::invalid_argument("seqd client: token longer than 256 bytes");
  }
  if (options.max_in_flight_per_connection < 1) {
    throw std::invalid_argument("seqd client: max_in_flight_per_connection < 1");
  }
  if (options.call_deadline.count() < 0) {
    throw std::invalid_argument("seqd client: call_deadline < 0");
  }
  if (options.max_attempts == 0 && options.call_deadline.count() == 0) {
    throw std::invalid_argument(
        "seqd client: max_attempts 0 (no cap) needs a call_deadline (0: none)");
  }
  if (options.connect_timeout.count() <= 0 || options.call_timeout.count() <= 0) {
    throw std::invalid_argument("seqd client: timeouts must be positive");
  }
  if (options.backoff_initial.count() < 0 || options.backoff_max < options.backoff_initial) {
    throw std::invalid_argument("seqd client: need 0 <= backoff_initial <= backoff_max");
  }
  if (options.resync_every.count() < 0) {
    throw std::invalid_argument("seqd client: resync_every must be >= 0");
  }
  if (options.prefetch > 0xFFFFFFFFu)
    throw std::invalid_argument("seqd client: prefetch too large");
  if (options.tls) {
    tls_context =
        MakeTlsClientContext(options.tls_ca_file, options.tls_cert_file, options.tls_key_file);
  } else if (!options.tls_ca_file.empty() || !options.tls_server_name.empty() ||
             !options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    // Never fall back to plaintext when TLS settings were given.
    throw std::invalid_argument("seqd client: TLS files or server name given without tls = true");
  }
  current = g_round_robin.fetch_add(1) % endpoints.size();
}

// --- endpoints -------------------------------------------------------------

Clock::duration AsyncClient::Impl::Backoff(int failures) const {
  const auto initial = std::chrono::duration_cast<Clock::duration>(options.backoff_initial);
  const auto cap = std::chrono::duration_cast<Clock::duration>(options.backoff_max);
  Clock::duration d = initial;
  for (int i = 1; i < failures && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

int AsyncClient::Impl::PickEndpoint(size_t start) {
  const size_t n = endpoints.size();
  const Clock::time_point now = Clock::now();
  size_t best = start % n;
  for (size_t i = 0; i < n; ++i) {
    const size_t e = (start + i) % n;
    if (endpoints[e].down_until <= now) return static_cast<int>(e);
    if (endpoints[e].down_until < endpoints[best].down_until) best = e;
  }
  return static_cast<int>(best);
}

void AsyncClient::Impl::MarkDown(int e, Clock::duration at_least) {
  Endpoint& ep = endpoints[e];
  ++ep.failures;
  ep.down_until = Clock::now() + std::max(Backoff(ep.failures), at_least);
  if (current == static_cast<size_t>(e)) current = (current + 1) % endpoints.size();
}

// --- connections -------------------------------------------------------------

std::shared_ptr<Connection> AsyncClient::Impl::GetConnection(int e) {
  Endpoint& ep = endpoints[e];
  if (ep.conn && ep.conn->state != Connection::State::kClosed) return ep.conn;
  auto conn = std::make_shared<Connection>(strand, e);
  if (tls_context) {
    conn->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(conn->socket, *tls_context);
  }
  if (!options.token.empty()) {
    // First on the wire, so the server knows us before any call. Its id is
    // in no call's `pending`: the answer is dropped (a refused token shows
    // in every call's own answer).
    proto::AppendFrame(conn->out, proto::Opcode::kAuth, 0, conn->next_request_id++, options.token);
  }
  if (watch_placement) {
    // Next, PLACEMENT: asks for the placement version's pushes (store
    // groups) and tells ours, if we have one. Like AUTH's, its answer is no
    // call's; a server before the op answers UNKNOWN_OPCODE, ignored.
    conn->told_placement = options.placement_version ? options.placement_version() : 0;
    proto::AppendPlacementRequest(conn->out, conn->next_request_id++, conn->told_placement);
  }
  ep.conn = conn;
  conns.insert(conn);
  Connect(conn);
  return conn;
}

void AsyncClient::Impl::Connect(const std::shared_ptr<Connection>& conn) {
  const Endpoint& ep = endpoints[conn->endpoint];
  conn->connect_timer.expires_after(options.connect_timeout);
  conn->connect_timer.async_wait([conn](const boost::system::error_code& ec) {
    if (ec || conn->state != Connection::State::kConnecting) return;
    conn->connect_timed_out = true;
    boost::system::error_code ignored;
    conn->resolver.cancel();
    conn->socket.close(ignored);
  });
  conn->resolver.async_resolve(
      ep.host, ep.port,
      [self = shared_from_this(), conn](const boost::system::error_code& ec,
                                        const tcp::resolver::results_type& results) {
        if (conn->state != Connection::State::kConnecting) return;
        if (ec) return self->ConnectFailed(conn, "resolve", ec);
        asio::async_connect(
            conn->socket, results,
            [self, conn](const boost::system::error_code& ec, const tcp::endpoint&) {
              if (conn->state != Connection::State::kConnecting) return;
              if (ec) return self->ConnectFailed(conn, "connect to", ec);
              self->Connected(conn);
            });
      });
}

void AsyncClient::Impl::ConnectFailed(const std::shared_ptr<Connection>& conn, const char* what,
                                      const boost::system::error_code& ec) {
  const Endpoint& ep = endpoints[conn->endpoint];
  std::string message = conn->connect_timed_out
                            ? "connect to " + ep.name + " timed out after " +
                                  std::to_string(options.connect_timeout.count()) + " ms"
                            : std::string(what) + " " + ep.name + ": " + ec.message();
  ConnFail(conn, StatusCode::kUnavailable, std::move(message), true);
}

void AsyncClient::Impl::Connected(const std::shared_ptr<Connection>& conn) {
  boost::system::error_code ignored;
  conn->socket.set_option(tcp::no_delay(true), ignored);
  if (conn->tls) return Handshake(conn);
  Opened(conn);
}

// The connect timer still runs. A refused certificate fails the connection
// like a refused connect (kUnavailable, the endpoint marked down), with the
// reason in the message.
void AsyncClient::Impl::Handshake(const std::shared_ptr<Connection>& conn) {
  const Endpoint& ep = endpoints[conn->endpoint];
  const std::string& name = options.tls_server_name.empty() ? ep.host : options.tls_server_name;
  std::string error;
  if (!SetTlsPeerName(conn->tls->native_handle(), name, error)) {
    return ConnFail(conn, StatusCode::kUnavailable, ep.name + ": " + error, true);
  }
  conn->tls->async_handshake(
      asio::ssl::stream_base::client,
      [self = shared_from_this(), conn](const boost::system::error_code& ec) {
        if (conn->state != Connection::State::kConnecting) return;
        if (!ec) return self->Opened(conn);
        const Endpoint& ep = self->endpoints[conn->endpoint];
        std::string message = conn->connect_timed_out
                                  ? "TLS handshake with " + ep.name + " timed out after " +
                                        std::to_string(self->options.connect_timeout.count()) +
                                        " ms"
                                  : "TLS handshake with " + ep.name + ": " +
                                        TlsFailureReason(conn->tls->native_handle(), ec);
        self->ConnFail(conn, StatusCode::kUnavailable, std::move(message), true);
      });
}

void AsyncClient::Impl::Opened(const std::shared_ptr<Connection>& conn) {
  conn->connect_timer.cancel();
  conn->state = Connection::State::kOpen;
  // last_read stays unset until a frame comes: calls sent while connecting
  // count as unanswered (a stopped server's kernel completes the connect).
  StartRead(conn);
  StartWrite(conn);
}

// --- frames --------------------------------------------------------------------

void AsyncClient::Impl::StartWrite(const std::shared_ptr<Connection>& conn) {
  if (conn->write_in_flight || conn->out.empty() || conn->state != Connection::State::kOpen) {
    return;
  }
  conn->writing.swap(conn->out);
  conn->out.clear();
  conn->write_in_flight = true;
  auto on_written = [self = shared_from_this(), conn](const boost::system::error_code& ec, size_t) {
    conn->write_in_flight = false;
    conn->writing.clear();
    if (conn->state == Connection::State::kClosed) return;
    if (ec) {
      return self->ConnFail(
          conn, StatusCode::kUnavailable,
          "write to " + self->endpoints[conn->endpoint].name + ": " + ec.message(), true);
    }
    self->StartWrite(conn);
  };
  if (conn->tls) {
    asio::async_write(*conn->tls, asio::buffer(conn->writing), std::move(on_written));
  } else {
    asio::async_write(conn->socket, asio::buffer(conn->writing), std::move(on_written));
  }
}

void AsyncClient::Impl::StartRead(const std::shared_ptr<Connection>& conn) {
  if (conn->in_begin == conn->in_end) conn->in_begin = conn->in_end = 0;
  if (conn->in.size() - conn->in_end < kReadChunk / 4) {
    if (conn->in_begin > 0) {
      std::memmove(conn->in.data(), conn->in.data() + conn->in_begin,
                   conn->in_end - conn->in_begin);
      conn->in_end -= conn->in_begin;
      conn->in_begin = 0;
    }
    if (conn->in.size() - conn->in_end < kReadChunk / 4) {
      conn->in.resize(std::max(conn->in.size() * 2, conn->in_end + kReadChunk));
    }
  }
  auto on_read = [self = shared_from_this(), conn](const boost::system::error_code& ec, size_t n) {
    if (conn->state == Connection::State::kClosed) return;
    if (ec) {
      const std::string& name = self->endpoints[conn->endpoint].name;
      // An orderly close of an idle connection (the server's idle
      // timeout) is no reason to avoid the endpoint. Over TLS, a close
      // without close_notify is "stream truncated": a close all the same.
      const bool eof = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
      const bool idle = conn->pending.empty() && conn->waiting.empty();
      return self->ConnFail(
          conn, StatusCode::kUnavailable,
          eof ? "connection closed by " + name : "read from " + name + ": " + ec.message(),
          !(idle && eof));
    }
    conn->in_end += n;
    conn->last_read = Clock::now();
    self->ProcessInput(conn);
    if (conn->state != Connection::State::kClosed) self->StartRead(conn);
  };
  const auto buffer = asio::buffer(conn->in.data() + conn->in_end, conn->in.size() - conn->in_end);
  if (conn->tls) {
    conn->tls->async_read_some(buffer, std::move(on_read));
  } else {
    conn->socket.async_read_some(buffer, std::move(on_read));
  }
}

void AsyncClient::Impl::ProcessInput(const std::shared_ptr<Connection>& conn) {
  while (conn->state != Connection::State::kClosed) {
    const std::string_view input(conn->in.data() + conn->in_begin, conn->in_end - conn->in_begin);
    const proto::DecodeResult r = proto::DecodeServerFrame(input);
    if (r.state == proto::DecodeState::kNeedMore) return;
    if (r.state == proto::DecodeState::kError) {
      return ConnFail(conn, StatusCode::kProtocol,
                      "undecodable data from " + endpoints[conn->endpoint].name + " (" +
                          std::string(proto::StatusName(r.error)) + ")",
                      true);
    }
    HandleFrame(conn, r.frame);  // never touches conn->in
    conn->in_begin += r.consumed;
  }
}

void AsyncClient::Impl::HandleFrame(const std::shared_ptr<Connection>& conn,
                                    const proto::FrameView& f) {
  if (!conn->answered) {
    // The endpoint works: an answer, not a connect (a stopped process's
    // kernel still accepts connections), ends its run of failures.
    conn->answered = true;
    endpoints[conn->endpoint].failures = 0;
  }
  const Endpoint& ep = endpoints[conn->endpoint];
  if (!f.is_response()) {
    return ConnFail(conn, StatusCode::kProtocol, "request frame from " + ep.name, true);
  }
  std::optional<proto::ResponseView> resp = proto::ParseResponse(f.payload);
  if (proto::IsPush(f)) return HandlePush(conn, f, resp);
  if (f.opcode == static_cast<uint8_t>(proto::Opcode::kProtocolError) || f.request_id == 0) {
    // The server rejected our framing and closes the connection.
    if (!resp)
      return ConnFail(conn, StatusCode::kProtocol, "bad error frame from " + ep.name, true);
    return ConnFail(conn, static_cast<StatusCode>(resp->status),
                    ep.name + " closed the connection: " + std::string(resp->message), false);
  }
  if (f.opcode == static_cast<uint8_t>(proto::kOpPlacement)) {
    // The answer to a PLACEMENT TellPlacement sent (no call waits for it):
    // the server's version, or an error from a server that does not know
    // the op (ignored).
    std::optional<int64_t> version;
    if (resp && resp->status == proto::Status::kOk) {
      version = proto::ParsePlacementVersion(resp->result);
    }
    if (version) NotePlacement(*version);
    return;
  }
  OnAnswer(conn, f, resp);
}

void AsyncClient::Impl::ConnFail(const std::shared_ptr<Connection>& conn, StatusCode code,
                                 std::string message, bool mark_down) {
  if (conn->state == Connection::State::kClosed) return;
  conn->state = Connection::State::kClosed;
  boost::system::error_code ignored;
  conn->connect_timer.cancel();
  conn->resolver.cancel();
  conn->socket.close(ignored);
  conns.erase(conn);
  Endpoint& ep = endpoints[conn->endpoint];
  if (ep.conn == conn) ep.conn.reset();
  if (mark_down) MarkDown(conn->endpoint);
  if (!closed) LoseSubscriptions(conn, message);

  std::vector<std::shared_ptr<Call>> victims;
  victims.reserve(conn->pending.size() + conn->waiting.size());
  for (auto& [id, call] : conn->pending) victims.push_back(std::move(call));
  for (auto& call : conn->waiting) victims.push_back(std::move(call));
  conn->pending.clear();
  conn->waiting.clear();
  for (const std::shared_ptr<Call>& call : victims) {
    if (call->done || call->conn != conn) continue;  // moved on, or a stale waiting entry
    Disarm(call);
    RetryOrFail(call, code, message);
  }
}

}  // namespace seqd::client
