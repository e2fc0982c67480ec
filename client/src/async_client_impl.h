// AsyncClient's transport, shared by async_client.cc (connections, calls,
// subscriptions, Close) and async_client_calls.cc (the typed message-store
// and snowflake calls). Internal to the client library.
//
// Everything here runs on one strand of the user's executor: public calls
// post to it, and every socket and timer uses it as its executor, so no
// state needs a lock. Callbacks are posted to the strand as well, never run
// from inside our own bookkeeping, so a throwing or re-entrant callback
// cannot leave a connection half-updated.
//
// Over 400 lines because Impl is one state machine (endpoints, connections,
// calls in flight, retries, subscriptions, prefetch) whose members share the
// strand's invariants; the typed calls and the public entry points live in
// the .cc files.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "proto/binary_codec.h"
#include "proto/cluster_codec.h"
#include "proto/message_codec.h"
#include "proto/shard_hash.h"
#include "proto/snowflake_codec.h"
#include "seqd/client.h"
#include "subscription_keeper.h"
#include "tls_client.h"

namespace seqd::client {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace detail {

// Largest key the frame can carry (u16 length); the server's own rules are
// stricter and answered as INVALID_ARGUMENT.
inline constexpr size_t kMaxKeyBytes = 0xFFFF;
inline constexpr size_t kReadChunk = 64 * 1024;
// Cluster mode: how often the shard map is fetched again on its own, and
// how soon after the last fetch a routed call that found it wrong may.
inline constexpr auto kShardMapRefresh = std::chrono::seconds(10);
inline constexpr auto kShardMapMinInterval = std::chrono::milliseconds(100);

inline bool Retryable(StatusCode code) {
  return code == StatusCode::kTimeout || code == StatusCode::kUnavailable ||
         code == StatusCode::kStoreUnavailable || code == StatusCode::kShuttingDown ||
         code == StatusCode::kNotServing;
}

// kRaw: any op sent as opcode + payload whose OK result a typed wrapper
// decodes (the message store and snowflake ops).
enum class Op { kNextIds, kPing, kRaw };

// A subscriber's callbacks, shared by the conversations it subscribed.
struct SubHandlers {
  AsyncClient::MessageFn on_message;
  AsyncClient::LostFn on_lost;
};

struct Connection;

// One user call, across its attempts.
struct Call {
  explicit Call(const asio::any_io_executor& ex) : timer(ex) {}

  uint64_t seq = 0;
  Op op = Op::kNextIds;
  std::string key;
  uint32_t count = 0;
  std::string on_behalf_of;  // NEXT_IDS's optional trailer
  std::function<void(ClientResult<IdBatch>)> on_ids;
  std::function<void(ClientResult<microseconds>)> on_ping;
  // Op::kRaw: the request payload, and the raw OK result (decoded by the
  // typed wrapper).
  proto::Opcode opcode = proto::Opcode::kPing;
  std::string body;
  std::function<void(ClientResult<std::string>)> on_raw;
  int preferred_endpoint = -1;  // where the first attempt goes, if >= 0
  // Cluster mode (ClientOptions::route_by_shard): the key whose owner the
  // call may go to ("" for calls not routed by key), and whether this
  // attempt went there with NO_FORWARD.
  std::string route_key;
  bool routed = false;
  std::vector<std::string> sub_convs;  // SUBSCRIBE: registered on success
  std::shared_ptr<SubHandlers> sub_handlers;

  // One timer: the attempt's deadline while in flight, the backoff between attempts.
  asio::steady_timer timer;
  uint64_t timer_gen = 0;  // bumped to disarm a handler already queued

  int attempt = 0;
  int endpoint = -1;
  std::shared_ptr<Connection> conn;  // the attempt's connection; null between attempts
  bool sent = false;                 // in conn->pending (else queued in conn->waiting)
  uint32_t request_id = 0;
  Clock::time_point sent_at;
  bool done = false;
};

struct Connection {
  Connection(const asio::any_io_executor& ex, int ep)
      : socket(ex), resolver(ex), connect_timer(ex), endpoint(ep) {}

  tcp::socket socket;
  // With ClientOptions::tls: the TLS stream over `socket`, handshaken before
  // the connection is kOpen; every read and write goes through it. Null on
  // plain connections (their I/O uses `socket` directly).
  std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
  tcp::resolver resolver;
  asio::steady_timer connect_timer;
  int endpoint;
  enum class State { kConnecting, kOpen, kClosed } state = State::kConnecting;
  bool connect_timed_out = false;

  std::string out;      // frames not yet handed to the socket
  std::string writing;  // the frames of the write in flight
  bool write_in_flight = false;

  std::vector<char> in;  // received bytes in [in_begin, in_end)
  size_t in_begin = 0;
  size_t in_end = 0;
  Clock::time_point last_read{};

  std::unordered_map<uint32_t, std::shared_ptr<Call>> pending;
  // Calls beyond max_in_flight_per_connection. Entries whose call moved on
  // (timed out, finished, or already sent) are skipped when popped.
  std::deque<std::shared_ptr<Call>> waiting;
  uint32_t next_request_id = 1;
};

struct Endpoint {
  std::string host;
  std::string port;
  std::string name;  // as given
  Clock::time_point down_until{};
  int failures = 0;
  std::shared_ptr<Connection> conn;  // the connection new calls use
};

inline std::atomic<size_t> g_round_robin{0};

inline Message ToMessage(std::string_view conv_id, const proto::MessageView& v) {
  Message m;
  m.conv_id = std::string(conv_id);
  m.seq = v.seq;
  m.server_msg_id = v.server_msg_id;
  m.sender_id = std::string(v.sender_id);
  m.client_msg_id = std::string(v.client_msg_id);
  m.content_type = v.content_type;
  m.status = static_cast<MessageStatus>(v.status);
  m.send_time_ms = v.send_time_ms;
  m.payload = std::string(v.payload);
  return m;
}

inline MemberInfo ToMember(const proto::MemberWire& w) {
  return MemberInfo{w.min_seq, w.max_seq, w.read_seq};
}

// Wraps a typed callback: decodes the raw OK result as Res and converts it.
template <typename Res, typename T, typename Convert>
inline std::function<void(ClientResult<std::string>)> Decoding(
    std::function<void(ClientResult<T>)> done, Convert convert) {
  return [done = std::move(done), convert](ClientResult<std::string> raw) {
    if (!raw.ok()) return done(ClientResult<T>(raw.code(), raw.message()));
    std::optional<Res> res = proto::DecodeBody<Res>(raw.value());
    if (!res) return done(ClientResult<T>(StatusCode::kProtocol, "malformed result"));
    done(ClientResult<T>(convert(*res)));
  };
}

// `id` if the ids fit the wire, else empty (the call fails before sending).
inline std::string_view IdView(bool fit, const std::string& id) {
  return fit ? std::string_view(id) : std::string_view();
}

// True if every id fits the wire's u16 length.
inline bool IdsFit(std::initializer_list<const std::string*> ids) {
  for (const std::string* id : ids) {
    if (id->size() > kMaxKeyBytes) return false;
  }
  return true;
}

inline std::vector<std::string_view> Views(const std::vector<std::string>& v, bool& fit) {
  std::vector<std::string_view> out;
  out.reserve(v.size());
  for (const std::string& s : v) {
    if (s.size() > kMaxKeyBytes) fit = false;
    out.push_back(s);
  }
  if (!fit) out.clear();
  return out;
}

inline auto MemberDecoding(AsyncClient::Done<MemberInfo> done) {
  return Decoding<proto::MemberRes>(std::move(done),
                                    [](const proto::MemberRes& r) { return ToMember(r.member); });
}

}  // namespace detail

using namespace detail;  // NOLINT: internal header of the client library

struct AsyncClient::Impl : std::enable_shared_from_this<AsyncClient::Impl> {
  Impl(asio::any_io_executor executor, ClientOptions opts)
      : strand(asio::make_strand(std::move(executor))),
        options(std::move(opts)),
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
    if (options.max_attempts < 1) throw std::invalid_argument("seqd client: max_attempts < 1");
    if (options.token.size() > proto::kMaxAuthSecret) {
      throw std::invalid_argument("seqd client: token longer than 256 bytes");
    }
    if (options.max_in_flight_per_connection < 1) {
      throw std::invalid_argument("seqd client: max_in_flight_per_connection < 1");
    }
    if (options.connect_timeout.count() <= 0 || options.call_timeout.count() <= 0) {
      throw std::invalid_argument("seqd client: timeouts must be positive");
    }
    if (options.backoff_initial.count() < 0 || options.backoff_max < options.backoff_initial) {
      throw std::invalid_argument("seqd client: need 0 <= backoff_initial <= backoff_max");
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

  asio::strand<asio::any_io_executor> strand;
  const ClientOptions options;
  std::shared_ptr<asio::ssl::context> tls_context;  // options.tls only
  // Grows (never shrinks) as the shard map names owners not given in
  // options.endpoints: index it, never keep references across handlers.
  std::vector<Endpoint> endpoints;
  // Cluster mode's shard map, as last fetched (CLUSTER_MAP).
  struct ShardRoutes {
    uint32_t shards = 0;
    std::vector<int> owner;  // by shard: endpoint index, -1 for none (or not live)
    bool fetching = false;
    bool unsupported = false;  // the server has no cluster mode: stop asking
    Clock::time_point fetched_at{};
  } routes;
  size_t current = 0;  // where new calls start
  bool closed = false;
  uint64_t next_call_seq = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Call>> calls;  // every call not done
  std::set<std::shared_ptr<Connection>> conns;                // every connection not closed
  std::mt19937_64 rng;

  // Subscriptions: conversation -> callbacks and the connection they live on.
  struct SubEntry {
    std::shared_ptr<SubHandlers> handlers;
    std::shared_ptr<Connection> conn;
  };
  std::unordered_map<std::string, SubEntry> subs;
  // ClientOptions::resubscribe: the application's subscriptions, kept over
  // the raw ones in `subs`. Made at the first Subscribe.
  std::shared_ptr<SubscriptionKeeper> keeper;

  // Local prefetch, per key.
  struct KeyCache {
    std::deque<IdRange> ranges;
    uint64_t available = 0;
    bool refilling = false;
    std::deque<std::function<void(ClientResult<IdBatch>)>> waiters;
  };
  std::unordered_map<std::string, KeyCache> cache;

  // --- results -------------------------------------------------------------

  template <typename T>
  void Deliver(std::function<void(ClientResult<T>)> done, ClientResult<T> result) {
    asio::post(strand, [done = std::move(done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }

  void Fail(const std::shared_ptr<Call>& call, StatusCode code, std::string message) {
    if (call->done) return;
    Retire(call);
    if (call->op == Op::kNextIds) {
      Deliver(std::move(call->on_ids), ClientResult<IdBatch>(code, std::move(message)));
    } else if (call->op == Op::kRaw) {
      Deliver(std::move(call->on_raw), ClientResult<std::string>(code, std::move(message)));
    } else {
      Deliver(std::move(call->on_ping), ClientResult<microseconds>(code, std::move(message)));
    }
  }

  void Retire(const std::shared_ptr<Call>& call) {
    call->done = true;
    Disarm(call);
    call->conn.reset();
    calls.erase(call->seq);
  }

  // --- timers ----------------------------------------------------------------

  template <typename F>
  void Arm(const std::shared_ptr<Call>& call, Clock::duration after, F fn) {
    const uint64_t gen = ++call->timer_gen;
    call->timer.expires_after(after);
    call->timer.async_wait([self = shared_from_this(), call, gen,
                            fn = std::move(fn)](const boost::system::error_code& ec) mutable {
      if (ec || call->done || call->timer_gen != gen) return;
      fn(call);
    });
  }

  void Disarm(const std::shared_ptr<Call>& call) {
    ++call->timer_gen;
    call->timer.cancel();
  }

  Clock::duration Backoff(int failures) {
    const auto initial = std::chrono::duration_cast<Clock::duration>(options.backoff_initial);
    const auto cap = std::chrono::duration_cast<Clock::duration>(options.backoff_max);
    Clock::duration d = initial;
    for (int i = 1; i < failures && d < cap; ++i) d *= 2;
    return std::min(d, cap);
  }

  // Exponential backoff with jitter: uniform in [base/2, base].
  Clock::duration JitteredBackoff(int attempt) {
    const Clock::duration base = Backoff(attempt);
    if (base.count() <= 1) return base;
    std::uniform_int_distribution<Clock::rep> dist(base.count() / 2, base.count());
    return Clock::duration(dist(rng));
  }

  // --- endpoints -------------------------------------------------------------

  // The first endpoint at or after `start` that is not marked down; if all
  // are, the one whose backoff ends first.
  int PickEndpoint(size_t start) {
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

  void MarkDown(int e) {
    Endpoint& ep = endpoints[e];
    ++ep.failures;
    ep.down_until = Clock::now() + Backoff(ep.failures);
    if (current == static_cast<size_t>(e)) current = (current + 1) % endpoints.size();
  }

  // --- calls -------------------------------------------------------------------

  void Submit(std::shared_ptr<Call> call) {
    if (closed) return Fail(call, StatusCode::kCancelled, "client closed");
    call->seq = next_call_seq++;
    calls.emplace(call->seq, call);
    if (const int owner = OwnerEndpoint(call->route_key); owner >= 0) {
      call->routed = true;
      return StartAttempt(call, static_cast<size_t>(owner));
    }
    StartAttempt(call, call->preferred_endpoint >= 0 ? static_cast<size_t>(call->preferred_endpoint)
                                                     : current);
  }

  void StartAttempt(const std::shared_ptr<Call>& call, size_t start) {
    ++call->attempt;
    call->endpoint = PickEndpoint(start);
    std::shared_ptr<Connection> conn = GetConnection(call->endpoint);
    call->conn = conn;
    call->sent = false;
    Arm(call, options.call_timeout,
        [this](const std::shared_ptr<Call>& c) { OnAttemptTimeout(c); });
    if (conn->pending.size() < options.max_in_flight_per_connection) {
      Send(conn, call);
    } else {
      conn->waiting.push_back(call);
    }
  }

  void Send(const std::shared_ptr<Connection>& conn, const std::shared_ptr<Call>& call) {
    uint32_t id;
    do {
      id = conn->next_request_id++;
    } while (id == 0 || conn->pending.count(id) != 0);  // 0 is the protocol-error frame's id
    call->request_id = id;
    call->sent = true;
    call->sent_at = Clock::now();
    conn->pending.emplace(id, call);
    const size_t frame_start = conn->out.size();
    if (call->op == Op::kNextIds) {
      proto::AppendNextIdsRequest(conn->out, id, call->key, call->count, call->on_behalf_of);
    } else if (call->op == Op::kRaw) {
      proto::AppendFrame(conn->out, call->opcode, 0, id, call->body);
    } else {
      proto::AppendFrame(conn->out, proto::Opcode::kPing, 0, id, {});
    }
    if (options.no_forward || call->routed) {
      conn->out[frame_start + 7] |= static_cast<char>(proto::kFlagNoForward);
    }
    StartWrite(conn);
  }

  void PumpWaiting(const std::shared_ptr<Connection>& conn) {
    while (conn->state != Connection::State::kClosed && !conn->waiting.empty() &&
           conn->pending.size() < options.max_in_flight_per_connection) {
      std::shared_ptr<Call> call = std::move(conn->waiting.front());
      conn->waiting.pop_front();
      if (call->done || call->sent || call->conn != conn) continue;
      Send(conn, call);
    }
  }

  void OnAttemptTimeout(const std::shared_ptr<Call>& call) {
    std::shared_ptr<Connection> conn = std::move(call->conn);
    const Endpoint& ep = endpoints[call->endpoint];
    std::string message = "no answer from " + ep.name + " within " +
                          std::to_string(options.call_timeout.count()) + " ms";
    if (conn && call->sent) {
      auto it = conn->pending.find(call->request_id);
      if (it != conn->pending.end() && it->second == call) conn->pending.erase(it);
      if (conn->state == Connection::State::kOpen && conn->last_read < call->sent_at) {
        // Nothing at all came back since this call was sent: take the
        // connection for dead (a hung or black-holed server) so the calls
        // behind it move on too, and try the endpoint again after a backoff.
        RetryOrFail(call, StatusCode::kTimeout, message);
        ConnFail(conn, StatusCode::kTimeout, "connection to " + ep.name + " stalled", true);
        return;
      }
      PumpWaiting(conn);
    }
    RetryOrFail(call, StatusCode::kTimeout, std::move(message));
  }

  void RetryOrFail(const std::shared_ptr<Call>& call, StatusCode code, std::string message) {
    if (call->done) return;
    call->conn.reset();
    call->sent = false;
    if (closed) return Fail(call, StatusCode::kCancelled, "client closed");
    if (call->routed) {
      // The map was wrong (or the owner unreachable): refresh it, and let
      // the next attempt go the ordinary way (a server forwards it).
      call->routed = false;
      FetchShardMap(/*force=*/true);
      if (code == StatusCode::kWrongOwner && call->attempt < options.max_attempts) {
        return StartAttempt(call, current);
      }
    }
    if (Retryable(code) && call->attempt < options.max_attempts) {
      const size_t next = (static_cast<size_t>(call->endpoint) + 1) % endpoints.size();
      Arm(call, JitteredBackoff(call->attempt),
          [this, next](const std::shared_ptr<Call>& c) { StartAttempt(c, next); });
      return;
    }
    if (call->attempt > 1) message += " (after " + std::to_string(call->attempt) + " attempts)";
    Fail(call, code, std::move(message));
  }

  // --- cluster mode: routing by shard ----------------------------------------------

  // The endpoint that owns `key`'s shard as the map says, or -1 (not
  // routing, no map yet, no live owner, or the owner marked down).
  int OwnerEndpoint(const std::string& key) {
    if (!options.route_by_shard || key.empty() || routes.unsupported) return -1;
    FetchShardMap(/*force=*/false);
    if (routes.shards == 0 || routes.owner.size() != routes.shards) return -1;
    const int e = routes.owner[proto::ShardOfKey(key, routes.shards)];
    if (e < 0 || endpoints[e].down_until > Clock::now()) return -1;
    return e;
  }

  // Fetches the map in the background: at first use, every
  // kShardMapRefresh, and (force) when a routed call found it wrong. At
  // most one fetch at a time; calls meanwhile go the ordinary way.
  void FetchShardMap(bool force) {
    if (routes.fetching || routes.unsupported || closed) return;
    const Clock::time_point now = Clock::now();
    if (!force && routes.shards != 0 && now - routes.fetched_at < kShardMapRefresh) return;
    if (force && now - routes.fetched_at < kShardMapMinInterval) return;
    routes.fetching = true;
    routes.fetched_at = now;
    auto call = std::make_shared<Call>(strand);
    call->op = Op::kRaw;
    call->opcode = proto::kOpClusterMap;
    call->on_raw = [self = shared_from_this()](ClientResult<std::string> r) {
      self->routes.fetching = false;
      if (!r) {
        if (r.code() == StatusCode::kUnknownOpcode) self->routes.unsupported = true;
        return;
      }
      if (auto map = proto::ParseClusterMapResult(r.value())) self->UseShardMap(*map);
    };
    Submit(std::move(call));
  }

  void UseShardMap(const proto::ClusterMapWire& map) {
    std::vector<int> member_endpoint(map.members.size(), -1);
    for (size_t i = 0; i < map.members.size(); ++i) {
      const auto& m = map.members[i];
      if (!m.live) continue;
      auto it = std::find_if(endpoints.begin(), endpoints.end(),
                             [&](const Endpoint& ep) { return ep.name == m.advertise; });
      if (it != endpoints.end()) {
        member_endpoint[i] = static_cast<int>(it - endpoints.begin());
        continue;
      }
      Endpoint ep;
      if (!SplitEndpoint(m.advertise, ep.host, ep.port)) continue;
      ep.name = m.advertise;
      endpoints.push_back(std::move(ep));
      member_endpoint[i] = static_cast<int>(endpoints.size() - 1);
    }
    routes.shards = map.shards;
    routes.owner.assign(map.owners.size(), -1);
    for (size_t s = 0; s < map.owners.size(); ++s) {
      if (map.owners[s] != proto::kNoOwner) routes.owner[s] = member_endpoint[map.owners[s]];
    }
  }

  // --- connections -------------------------------------------------------------

  std::shared_ptr<Connection> GetConnection(int e) {
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
      proto::AppendFrame(conn->out, proto::Opcode::kAuth, 0, conn->next_request_id++,
                         options.token);
    }
    ep.conn = conn;
    conns.insert(conn);
    Connect(conn);
    return conn;
  }

  void Connect(const std::shared_ptr<Connection>& conn) {
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

  void ConnectFailed(const std::shared_ptr<Connection>& conn, const char* what,
                     const boost::system::error_code& ec) {
    const Endpoint& ep = endpoints[conn->endpoint];
    std::string message = conn->connect_timed_out
                              ? "connect to " + ep.name + " timed out after " +
                                    std::to_string(options.connect_timeout.count()) + " ms"
                              : std::string(what) + " " + ep.name + ": " + ec.message();
    ConnFail(conn, StatusCode::kUnavailable, std::move(message), true);
  }

  void Connected(const std::shared_ptr<Connection>& conn) {
    boost::system::error_code ignored;
    conn->socket.set_option(tcp::no_delay(true), ignored);
    if (conn->tls) return Handshake(conn);
    Opened(conn);
  }

  // TLS: verifies the server (CA, then its name) before any frame is sent;
  // the connect timer still runs. A refused certificate fails the
  // connection like a refused connect (kUnavailable, the endpoint marked
  // down), with the reason in the message.
  void Handshake(const std::shared_ptr<Connection>& conn) {
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

  void Opened(const std::shared_ptr<Connection>& conn) {
    conn->connect_timer.cancel();
    conn->state = Connection::State::kOpen;
    conn->last_read = Clock::now();
    endpoints[conn->endpoint].failures = 0;
    StartRead(conn);
    StartWrite(conn);
  }

  void StartWrite(const std::shared_ptr<Connection>& conn) {
    if (conn->write_in_flight || conn->out.empty() || conn->state != Connection::State::kOpen) {
      return;
    }
    conn->writing.swap(conn->out);
    conn->out.clear();
    conn->write_in_flight = true;
    auto on_written = [self = shared_from_this(), conn](const boost::system::error_code& ec,
                                                        size_t) {
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

  void StartRead(const std::shared_ptr<Connection>& conn) {
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
    auto on_read = [self = shared_from_this(), conn](const boost::system::error_code& ec,
                                                     size_t n) {
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
    const auto buffer =
        asio::buffer(conn->in.data() + conn->in_end, conn->in.size() - conn->in_end);
    if (conn->tls) {
      conn->tls->async_read_some(buffer, std::move(on_read));
    } else {
      conn->socket.async_read_some(buffer, std::move(on_read));
    }
  }

  void ProcessInput(const std::shared_ptr<Connection>& conn) {
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

  void HandleFrame(const std::shared_ptr<Connection>& conn, const proto::FrameView& f) {
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
    auto it = conn->pending.find(f.request_id);
    if (it == conn->pending.end()) return;  // a late answer to an attempt that timed out
    std::shared_ptr<Call> call = std::move(it->second);
    conn->pending.erase(it);
    Disarm(call);
    call->conn.reset();
    call->sent = false;
    const uint8_t want = static_cast<uint8_t>(call->op == Op::kNextIds ? proto::Opcode::kNextIds
                                              : call->op == Op::kRaw   ? call->opcode
                                                                       : proto::Opcode::kPing);
    if (!resp || f.opcode != want) {
      Fail(call, StatusCode::kProtocol, "malformed response from " + ep.name);
    } else if (resp->status != proto::Status::kOk) {
      const auto code = static_cast<StatusCode>(resp->status);
      if (code == StatusCode::kShuttingDown) {
        // The server closes this connection after answering: no new calls on
        // it; the ones still pending get their answers or a retry on close.
        if (endpoints[conn->endpoint].conn == conn) {
          endpoints[conn->endpoint].conn.reset();
          MarkDown(conn->endpoint);
        }
      }
      RetryOrFail(call, code, ep.name + ": " + std::string(resp->message));
    } else if (call->op == Op::kNextIds) {
      std::optional<std::vector<proto::IdRangeWire>> wire = proto::ParseNextIdsResult(resp->result);
      if (!wire || wire->empty()) {
        Fail(call, StatusCode::kProtocol, "malformed NEXT_IDS result from " + ep.name);
      } else {
        IdBatch batch;
        batch.ranges.reserve(wire->size());
        for (const proto::IdRangeWire& r : *wire) batch.ranges.push_back({r.first, r.last});
        if (!call->routed) current = static_cast<size_t>(conn->endpoint);
        Retire(call);
        Deliver(std::move(call->on_ids), ClientResult<IdBatch>(std::move(batch)));
      }
    } else if (call->op == Op::kRaw) {
      if (!call->routed) current = static_cast<size_t>(conn->endpoint);
      Retire(call);
      if (call->sub_handlers) {
        for (const std::string& conv : call->sub_convs) subs[conv] = {call->sub_handlers, conn};
      }
      Deliver(std::move(call->on_raw), ClientResult<std::string>(std::string(resp->result)));
    } else {
      const auto rtt = std::chrono::duration_cast<microseconds>(Clock::now() - call->sent_at);
      current = static_cast<size_t>(conn->endpoint);
      Retire(call);
      Deliver(std::move(call->on_ping), ClientResult<microseconds>(rtt));
    }
    PumpWaiting(conn);
  }

  // A frame the server sent on its own: a pushed message, or the end of
  // every subscription on `conn`.
  void HandlePush(const std::shared_ptr<Connection>& conn, const proto::FrameView& f,
                  const std::optional<proto::ResponseView>& resp) {
    const std::string& name = endpoints[conn->endpoint].name;
    if (!resp || f.request_id != 0) {
      return ConnFail(conn, StatusCode::kProtocol, "bad push frame from " + name, true);
    }
    if (f.opcode == static_cast<uint8_t>(proto::kOpPushDropped)) {
      return LoseSubscriptions(conn,
                               name + " dropped the subscriptions: " + std::string(resp->message));
    }
    if (f.opcode != static_cast<uint8_t>(proto::kOpPushMessage) ||
        resp->status != proto::Status::kOk) {
      return;  // a push kind this client does not know: ignored
    }
    std::optional<proto::PushMessage> push = proto::DecodeBody<proto::PushMessage>(resp->result);
    if (!push) return ConnFail(conn, StatusCode::kProtocol, "bad push from " + name, true);
    auto it = subs.find(std::string(push->conv_id));
    if (it == subs.end() || it->second.conn != conn) return;  // unsubscribed, or an old one
    Message m = ToMessage(push->conv_id, push->message);
    asio::post(strand, [handlers = it->second.handlers, m = std::move(m)]() mutable {
      if (handlers->on_message) handlers->on_message(std::move(m));
    });
  }

  // Forgets the subscriptions that lived on `conn` and tells their owners.
  void LoseSubscriptions(const std::shared_ptr<Connection>& conn, const std::string& reason) {
    std::map<std::shared_ptr<SubHandlers>, std::vector<std::string>> lost;
    for (auto it = subs.begin(); it != subs.end();) {
      if (it->second.conn == conn) {
        lost[it->second.handlers].push_back(it->first);
        it = subs.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [handlers, convs] : lost) {
      std::sort(convs.begin(), convs.end());
      asio::post(strand, [handlers = handlers, convs = std::move(convs), reason]() mutable {
        if (handlers->on_lost) handlers->on_lost(std::move(convs), reason);
      });
    }
  }

  // Closes `conn`; its calls are retried (or failed) with `code`.
  void ConnFail(const std::shared_ptr<Connection>& conn, StatusCode code, std::string message,
                bool mark_down) {
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

  void DoClose() {
    if (closed) return;
    closed = true;
    std::vector<std::shared_ptr<Connection>> all(conns.begin(), conns.end());
    for (const auto& conn : all) {
      ConnFail(conn, StatusCode::kCancelled, "client closed", false);
    }
    for (Endpoint& ep : endpoints) ep.conn.reset();
    subs.clear();
    if (keeper) keeper->Close();
    std::vector<std::shared_ptr<Call>> rest;
    for (auto& [seq, call] : calls) rest.push_back(call);
    for (const auto& call : rest) Fail(call, StatusCode::kCancelled, "client closed");
    for (auto& [key, kc] : cache) {
      for (auto& done : kc.waiters) {
        Deliver(std::move(done), ClientResult<IdBatch>(StatusCode::kCancelled, "client closed"));
      }
    }
    cache.clear();
  }

  // Submits an op whose request payload is `body`; `on_raw` gets the OK
  // result's bytes or the error.
  void SubmitRaw(proto::Opcode opcode, std::string body,
                 std::function<void(ClientResult<std::string>)> on_raw) {
    auto call = std::make_shared<Call>(strand);
    call->op = Op::kRaw;
    call->opcode = opcode;
    call->body = std::move(body);
    call->on_raw = std::move(on_raw);
    asio::post(strand, [self = shared_from_this(), call = std::move(call)]() mutable {
      self->Submit(std::move(call));
    });
  }

  // The calls the public API and the SubscriptionKeeper share; any thread
  // (async_client.cc, async_client_calls.cc).
  void SubscribeRaw(std::vector<std::string> conv_ids, AsyncClient::MessageFn on_message,
                    AsyncClient::LostFn on_lost, AsyncClient::Done<bool> done);
  void UnsubscribeRaw(std::vector<std::string> conv_ids, AsyncClient::Done<bool> done);
  void PullRange(std::string conv_id, PullOptions o, AsyncClient::Done<PullPage> done);
  void MaxSeqs(std::vector<std::string> conv_ids, AsyncClient::Done<std::vector<int64_t>> done);
  // On the strand: the keeper, made at first use.
  SubscriptionKeeper& Keeper();

  // Encodes `req` and submits it; fails at once (on the strand) with
  // INVALID_ARGUMENT if an id is too long for the wire or TOO_LARGE if the
  // request does not fit in a frame.
  template <typename Req>
  void SubmitMessage(const Req& req, std::function<void(ClientResult<std::string>)> on_raw,
                     bool ids_fit, std::shared_ptr<Call> call = nullptr) {
    if (!call) call = std::make_shared<Call>(strand);
    call->op = Op::kRaw;
    call->opcode = Req::kOpcode;
    call->on_raw = std::move(on_raw);
    if (!ids_fit) {
      return Deliver(std::move(call->on_raw),
                     ClientResult<std::string>(StatusCode::kInvalidArgument,
                                               "an id is longer than 65535 bytes"));
    }
    proto::EncodeBody(call->body, req);
    if (call->body.size() + proto::kHeaderSize > proto::kMaxFrameSize) {
      return Deliver(std::move(call->on_raw),
                     ClientResult<std::string>(StatusCode::kTooLarge,
                                               "request larger than the 1 MiB frame limit"));
    }
    asio::post(strand, [self = shared_from_this(), call = std::move(call)]() mutable {
      self->Submit(std::move(call));
    });
  }

  // --- prefetch --------------------------------------------------------------

  static int64_t TakeOne(KeyCache& kc) {
    IdRange& r = kc.ranges.front();
    const int64_t id = r.first;
    if (r.first == r.last) {
      kc.ranges.pop_front();
    } else {
      ++r.first;
    }
    --kc.available;
    return id;
  }

  void NextFromCache(std::string key, std::function<void(ClientResult<IdBatch>)> done) {
    if (closed) {
      return Deliver(std::move(done),
                     ClientResult<IdBatch>(StatusCode::kCancelled, "client closed"));
    }
    KeyCache& kc = cache[key];
    if (kc.available > 0 && kc.waiters.empty()) {
      const int64_t id = TakeOne(kc);
      Deliver(std::move(done), ClientResult<IdBatch>(IdBatch{{IdRange{id, id}}}));
    } else {
      kc.waiters.push_back(std::move(done));
    }
    MaybeRefill(key, kc);
  }

  void MaybeRefill(const std::string& key, KeyCache& kc) {
    if (kc.refilling) return;
    if (kc.available * 2 > options.prefetch && kc.waiters.empty()) return;
    kc.refilling = true;
    auto call = std::make_shared<Call>(strand);
    call->op = Op::kNextIds;
    call->key = key;
    call->count = static_cast<uint32_t>(options.prefetch);
    call->route_key = key;
    call->on_ids = [self = shared_from_this(), key](ClientResult<IdBatch> result) {
      self->OnRefill(key, std::move(result));
    };
    Submit(std::move(call));
  }

  void OnRefill(const std::string& key, ClientResult<IdBatch> result) {
    auto it = cache.find(key);
    if (it == cache.end()) return;  // closed meanwhile
    KeyCache& kc = it->second;
    kc.refilling = false;
    if (!result.ok()) {
      // The refill already had its retries: the waiters get its error.
      auto waiters = std::move(kc.waiters);
      kc.waiters.clear();
      for (auto& done : waiters) {
        Deliver(std::move(done), ClientResult<IdBatch>(result.code(), result.message()));
      }
      if (kc.available == 0) cache.erase(it);
      return;
    }
    for (const IdRange& r : result->ranges) {
      kc.ranges.push_back(r);
      kc.available += r.size();
    }
    while (!kc.waiters.empty() && kc.available > 0) {
      const int64_t id = TakeOne(kc);
      Deliver(std::move(kc.waiters.front()), ClientResult<IdBatch>(IdBatch{{IdRange{id, id}}}));
      kc.waiters.pop_front();
    }
    MaybeRefill(key, kc);
  }
};

}  // namespace seqd::client
