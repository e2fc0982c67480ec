// AsyncClient's calls in flight: a call is submitted, sent on its
// endpoint's connection (or queued behind max_in_flight_per_connection),
// matched with its answer by request id, timed out, retried on the next
// endpoint after a jittered backoff, or failed. Cluster mode routes a call
// by its key's shard to the owner the shard map names. On the strand
// (async_client_impl.h).
#include <algorithm>
#include <vector>

#include "async_client_impl.h"
#include "proto/shard_hash.h"

namespace seqd::client {

namespace {

// Cluster mode: how often the shard map is fetched again on its own, and
// how soon after the last fetch a routed call that found it wrong may.
constexpr auto kShardMapRefresh = std::chrono::seconds(10);
constexpr auto kShardMapMinInterval = std::chrono::milliseconds(100);

}  // namespace

// --- results -------------------------------------------------------------------

void AsyncClient::Impl::Fail(const std::shared_ptr<Call>& call, StatusCode code,
                             std::string message) {
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

void AsyncClient::Impl::Retire(const std::shared_ptr<Call>& call) {
  call->done = true;
  Disarm(call);
  call->conn.reset();
  calls.erase(call->seq);
}

void AsyncClient::Impl::Disarm(const std::shared_ptr<Call>& call) {
  ++call->timer_gen;
  call->timer.cancel();
}

Clock::duration AsyncClient::Impl::JitteredBackoff(int attempt) {
  const Clock::duration base = Backoff(attempt);
  if (base.count() <= 1) return base;
  std::uniform_int_distribution<Clock::rep> dist(base.count() / 2, base.count());
  return Clock::duration(dist(rng));
}

// --- attempts ------------------------------------------------------------------

void AsyncClient::Impl::Submit(std::shared_ptr<Call> call) {
  if (closed) return Fail(call, StatusCode::kCancelled, "client closed");
  call->seq = next_call_seq++;
  if (options.call_deadline.count() > 0) call->deadline = Clock::now() + options.call_deadline;
  calls.emplace(call->seq, call);
  if (const int owner = OwnerEndpoint(call->route_key); owner >= 0) {
    call->routed = true;
    return StartAttempt(call, static_cast<size_t>(owner));
  }
  StartAttempt(call, call->preferred_endpoint >= 0 ? static_cast<size_t>(call->preferred_endpoint)
                                                   : current);
}

void AsyncClient::Impl::SubmitRaw(proto::Opcode opcode, std::string body,
                                  std::function<void(ClientResult<std::string>)> on_raw,
                                  std::string route_key) {
  auto call = std::make_shared<Call>(strand);
  call->route_key = std::move(route_key);
  call->op = Op::kRaw;
  call->opcode = opcode;
  call->body = std::move(body);
  call->on_raw = std::move(on_raw);
  asio::post(strand, [self = shared_from_this(), call = std::move(call)]() mutable {
    self->Submit(std::move(call));
  });
}

void AsyncClient::Impl::StartAttempt(const std::shared_ptr<Call>& call, size_t start) {
  Clock::duration timeout = options.call_timeout;
  if (call->deadline != Clock::time_point::max()) {
    const Clock::duration left = call->deadline - Clock::now();
    if (left < std::chrono::milliseconds(1)) {  // as RetryOrFail: no attempt without time
      return Fail(call, StatusCode::kTimeout, DeadlineMessage(call, call->last_error));
    }
    timeout = std::min(timeout, left);
  }
  ++call->attempt;
  call->endpoint = PickEndpoint(start);
  std::shared_ptr<Connection> conn = GetConnection(call->endpoint);
  call->conn = conn;
  call->sent = false;
  call->attempt_timeout = std::chrono::duration_cast<milliseconds>(timeout);
  Arm(call, timeout, [this](const std::shared_ptr<Call>& c) { OnAttemptTimeout(c); });
  if (conn->pending.size() < options.max_in_flight_per_connection) {
    Send(conn, call);
  } else {
    conn->waiting.push_back(call);
  }
}

void AsyncClient::Impl::Send(const std::shared_ptr<Connection>& conn,
                             const std::shared_ptr<Call>& call) {
  if (options.placement_version) TellPlacement(conn);
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

void AsyncClient::Impl::PumpWaiting(const std::shared_ptr<Connection>& conn) {
  while (conn->state != Connection::State::kClosed && !conn->waiting.empty() &&
         conn->pending.size() < options.max_in_flight_per_connection) {
    std::shared_ptr<Call> call = std::move(conn->waiting.front());
    conn->waiting.pop_front();
    if (call->done || call->sent || call->conn != conn) continue;
    Send(conn, call);
  }
}

void AsyncClient::Impl::OnAttemptTimeout(const std::shared_ptr<Call>& call) {
  std::shared_ptr<Connection> conn = std::move(call->conn);
  const Endpoint& ep = endpoints[call->endpoint];
  std::string message = "no answer from " + ep.name + " within " +
                        std::to_string(call->attempt_timeout.count()) + " ms";
  if (call->attempt_timeout < options.call_timeout && !call->last_error.empty()) {
    // The call's deadline cut this attempt short: the error that made the
    // call retry is the one worth reporting.
    message += " left of call_deadline; before it: " + call->last_error;
  }
  if (conn && call->sent) {
    auto it = conn->pending.find(call->request_id);
    if (it != conn->pending.end() && it->second == call) conn->pending.erase(it);
    if (conn->state == Connection::State::kOpen && conn->last_read < call->sent_at) {
      // Nothing at all came back since this call was sent: take the
      // connection for dead (a hung, stopped or black-holed server) so the
      // calls behind it move on too. Its endpoint is avoided for at least
      // a call_timeout: trying it again costs one if it still hangs (a
      // stopped server's kernel still accepts the connection).
      MarkDown(call->endpoint, options.call_timeout);
      RetryOrFail(call, StatusCode::kTimeout, message);
      ConnFail(conn, StatusCode::kTimeout, "connection to " + ep.name + " stalled", false);
      return;
    }
    PumpWaiting(conn);
  }
  RetryOrFail(call, StatusCode::kTimeout, std::move(message));
}

void AsyncClient::Impl::RetryOrFail(const std::shared_ptr<Call>& call, StatusCode code,
                                    std::string message) {
  if (call->done) return;
  call->conn.reset();
  call->sent = false;
  if (closed) return Fail(call, StatusCode::kCancelled, "client closed");
  if (call->routed) {
    // The map was wrong (or the owner unreachable): refresh it, and let
    // the next attempt go the ordinary way (a server forwards it).
    call->routed = false;
    FetchShardMap(/*force=*/true);
    if (code == StatusCode::kWrongOwner && call->attempt < attempt_cap) {
      return StartAttempt(call, current);
    }
  }
  if (Retryable(code) && call->attempt < attempt_cap) {
    const size_t next = (static_cast<size_t>(call->endpoint) + 1) % endpoints.size();
    Clock::duration backoff = JitteredBackoff(call->attempt);
    if (call->deadline != Clock::time_point::max()) {
      const Clock::duration left = call->deadline - Clock::now();
      if (left < std::chrono::milliseconds(1)) {
        return Fail(call, StatusCode::kTimeout, DeadlineMessage(call, message));
      }
      if (backoff >= left) backoff = left / 2;  // leave the last attempt some time
      call->last_error = message;
    }
    Arm(call, backoff, [this, next](const std::shared_ptr<Call>& c) { StartAttempt(c, next); });
    return;
  }
  if (Retryable(code) && call->deadline != Clock::time_point::max() &&
      Clock::now() >= call->deadline) {
    return Fail(call, StatusCode::kTimeout, DeadlineMessage(call, message));
  }
  if (call->attempt > 1) message += " (after " + std::to_string(call->attempt) + " attempts)";
  Fail(call, code, std::move(message));
}

std::string AsyncClient::Impl::DeadlineMessage(const std::shared_ptr<Call>& call,
                                               const std::string& last) const {
  return "no answer within call_deadline " + std::to_string(options.call_deadline.count()) +
         " ms (" + std::to_string(call->attempt) + " attempts; last: " + last + ")";
}

// --- answers -------------------------------------------------------------------

void AsyncClient::Impl::OnAnswer(const std::shared_ptr<Connection>& conn, const proto::FrameView& f,
                                 const std::optional<proto::ResponseView>& resp) {
  const Endpoint& ep = endpoints[conn->endpoint];
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

// --- cluster mode: routing by shard --------------------------------------------

int AsyncClient::Impl::OwnerEndpoint(const std::string& key) {
  if (!options.route_by_shard || key.empty() || routes.unsupported) return -1;
  FetchShardMap(/*force=*/false);
  if (routes.shards == 0 || routes.owner.size() != routes.shards) return -1;
  const int e = routes.owner[proto::ShardOfKey(key, routes.shards)];
  if (e < 0 || endpoints[e].down_until > Clock::now()) return -1;
  return e;
}

// At most one fetch at a time; calls meanwhile go the ordinary way.
void AsyncClient::Impl::FetchShardMap(bool force) {
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

void AsyncClient::Impl::UseShardMap(const proto::ClusterMapWire& map) {
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

// --- store groups: the placement version ---------------------------------------

void AsyncClient::Impl::NotePlacement(int64_t version) {
  if (version <= placement_version.load(std::memory_order_relaxed)) return;
  placement_version.store(version, std::memory_order_release);
  if (options.on_placement_version) {
    asio::post(strand, [fn = options.on_placement_version, version] { fn(version); });
  }
  // Shards may have new owners after a move (its pause): the map again.
  if (options.route_by_shard) FetchShardMap(/*force=*/true);
}

void AsyncClient::Impl::TellPlacement(const std::shared_ptr<Connection>& conn) {
  const int64_t version = options.placement_version();
  if (version <= conn->told_placement) return;
  conn->told_placement = version;
  uint32_t id;
  do {
    id = conn->next_request_id++;
  } while (id == 0 || conn->pending.count(id) != 0);
  proto::AppendPlacementRequest(conn->out, id, version);
}

}  // namespace seqd::client
