// AsyncClient::Impl: the client's state and its jobs, one file each:
//   async_client_transport.cc      endpoints and failover, connections (TLS),
//                                  reading and writing frames;
//   async_client_requests.cc       a call's attempts: submit, send, match the
//                                  answer, time out, retry or fail; cluster
//                                  mode's routing by shard; store groups'
//                                  placement version;
//   async_client_subscriptions.cc  pushes, lost subscriptions, the glue to
//                                  SubscriptionKeeper;
//   async_client_prefetch.cc       local ID prefetch (ClientOptions::prefetch);
//   async_client.cc                the public entry points and Close;
//   async_client_calls.cc          the typed message-store and snowflake calls.
// Internal to the client library.
//
// Thread safety: everything here runs on one strand of the user's executor:
// public calls post to it, and every socket and timer uses it as its
// executor, so no state needs a lock (only `strand` and `options` are read
// from other threads, and never change, and `placement_version`, an
// atomic). Callbacks are posted to the strand
// as well, never run from inside our own bookkeeping, so a throwing or
// re-entrant callback cannot leave a connection half-updated.
#pragma once

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "async_client_decoding.h"
#include "async_client_records.h"
#include "proto/binary_codec.h"
#include "proto/cluster_codec.h"
#include "seqd/client.h"
#include "subscription_keeper.h"

namespace seqd::client {

using std::chrono::microseconds;
using std::chrono::milliseconds;

using namespace detail;  // NOLINT: internal header of the client library

struct AsyncClient::Impl : std::enable_shared_from_this<AsyncClient::Impl> {
  // Checks `opts` (std::invalid_argument naming the bad one) and builds the
  // TLS context (async_client_transport.cc).
  Impl(asio::any_io_executor executor, ClientOptions opts);

  asio::strand<asio::any_io_executor> strand;
  const ClientOptions options;
  // options.max_attempts, or the largest int for 0 (no cap: the call's
  // deadline ends its retries).
  const int attempt_cap;
  // Every connection asks for placement pushes (ClientOptions::
  // watch_placement, or what implies it).
  const bool watch_placement;
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
  // Store groups: the highest placement version a server told (read from
  // any thread by PlacementVersion(); written on the strand).
  std::atomic<int64_t> placement_version{0};
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
  // ClientOptions::resubscribe and Subscription handles: the application's
  // subscriptions, kept over the raw ones in `subs`. Made at first use.
  std::shared_ptr<SubscriptionKeeper> keeper;
  // The next Subscription handle's id (any thread).
  std::atomic<uint64_t> next_subscription{SubscriptionKeeper::kDefaultSub + 1};

  // Local prefetch, per key.
  struct KeyCache {
    std::deque<IdRange> ranges;
    uint64_t available = 0;
    bool refilling = false;
    std::deque<std::function<void(ClientResult<IdBatch>)>> waiters;
  };
  std::unordered_map<std::string, KeyCache> cache;

  // --- results and timers (here) ----------------------------------------------

  // Runs done(result) later on the strand, never inside the caller.
  template <typename T>
  void Deliver(std::function<void(ClientResult<T>)> done, ClientResult<T> result) {
    asio::post(strand, [done = std::move(done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }

  // Runs fn(call) after `after` unless the call is done or the timer is
  // re-armed or disarmed first (one timer per call).
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

  // --- endpoints and connections (async_client_transport.cc) -------------------

  // Backoff after `failures` consecutive failures: backoff_initial doubled
  // per failure, at most backoff_max.
  Clock::duration Backoff(int failures) const;
  // The first endpoint at or after `start` that is not marked down; if all
  // are, the one whose backoff ends first.
  int PickEndpoint(size_t start);
  // Avoids endpoint `e` for a backoff that grows with its consecutive
  // failures (reset by the first answer on a new connection), and for at
  // least `at_least`.
  void MarkDown(int e, Clock::duration at_least = Clock::duration::zero());
  // Endpoint `e`'s open or opening connection, else a new one (connecting).
  std::shared_ptr<Connection> GetConnection(int e);
  void Connect(const std::shared_ptr<Connection>& conn);
  void ConnectFailed(const std::shared_ptr<Connection>& conn, const char* what,
                     const boost::system::error_code& ec);
  void Connected(const std::shared_ptr<Connection>& conn);
  // TLS: verifies the server (CA, then its name) before any frame is sent.
  void Handshake(const std::shared_ptr<Connection>& conn);
  void Opened(const std::shared_ptr<Connection>& conn);
  // Hands conn->out to the socket unless a write is in flight or the
  // connection is not open yet.
  void StartWrite(const std::shared_ptr<Connection>& conn);
  void StartRead(const std::shared_ptr<Connection>& conn);
  // Decodes and handles the complete frames in conn->in.
  void ProcessInput(const std::shared_ptr<Connection>& conn);
  // A frame from the server: a push, the server's protocol error, or an answer.
  void HandleFrame(const std::shared_ptr<Connection>& conn, const proto::FrameView& f);
  // Closes `conn`; its calls are retried (or failed) with `code`, its
  // subscriptions lost (unless the client is closed).
  void ConnFail(const std::shared_ptr<Connection>& conn, StatusCode code, std::string message,
                bool mark_down);

  // --- calls (async_client_requests.cc) ------------------------------------------

  // Finishes `call` with an error (no-op if done).
  void Fail(const std::shared_ptr<Call>& call, StatusCode code, std::string message);
  // Marks `call` done and forgets it; its callback is the caller's to run.
  void Retire(const std::shared_ptr<Call>& call);
  void Disarm(const std::shared_ptr<Call>& call);
  // Exponential backoff with jitter: uniform in [base/2, base].
  Clock::duration JitteredBackoff(int attempt);
  // Starts a new call (on the strand): to its key's shard owner in cluster
  // mode, else to its preferred endpoint or the current one.
  void Submit(std::shared_ptr<Call> call);
  void StartAttempt(const std::shared_ptr<Call>& call, size_t start);
  // Puts `call`'s frame in conn->out and writes it.
  void Send(const std::shared_ptr<Connection>& conn, const std::shared_ptr<Call>& call);
  // Sends waiting calls while conn has room below max_in_flight_per_connection.
  void PumpWaiting(const std::shared_ptr<Connection>& conn);
  void OnAttemptTimeout(const std::shared_ptr<Call>& call);
  // Retries `call` (retryable code, attempts and call_deadline left) after
  // a backoff, else fails it: kTimeout if call_deadline passed, else `code`.
  void RetryOrFail(const std::shared_ptr<Call>& call, StatusCode code, std::string message);
  // The message of a call that ran out of call_deadline; `last`: the last
  // attempt's error.
  std::string DeadlineMessage(const std::shared_ptr<Call>& call, const std::string& last) const;
  // The answer `f` (with its parsed payload) to a call pending on `conn`,
  // if one still waits for it.
  void OnAnswer(const std::shared_ptr<Connection>& conn, const proto::FrameView& f,
                const std::optional<proto::ResponseView>& resp);
  // Submits an op whose request payload is `body`; `on_raw` gets the OK
  // result's bytes or the error. Any thread.
  // `route_key`: cluster mode's key, to send it straight to its owner
  // ("" for none).
  void SubmitRaw(proto::Opcode opcode, std::string body,
                 std::function<void(ClientResult<std::string>)> on_raw, std::string route_key = {});

  // Encodes `req` and submits it; fails at once (on the strand) with
  // INVALID_ARGUMENT if an id is too long for the wire or TOO_LARGE if the
  // request does not fit in a frame. Any thread.
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

  // Cluster mode: the endpoint that owns `key`'s shard as the map says, or
  // -1 (not routing, no map yet, no live owner, or the owner marked down).
  int OwnerEndpoint(const std::string& key);
  // Fetches the map in the background: at first use, every
  // kShardMapRefresh, and (force) when a routed call found it wrong.
  void FetchShardMap(bool force);
  void UseShardMap(const proto::ClusterMapWire& map);

  // Store groups: a server told placement `version` (a push, or the answer
  // to the PLACEMENT this client sent): recorded if it is the highest, then
  // ClientOptions::on_placement_version and, when routing, a map refresh.
  void NotePlacement(int64_t version);
  // ClientOptions::placement_version: appends a PLACEMENT request to
  // conn->out if the version rose above what `conn` was told.
  void TellPlacement(const std::shared_ptr<Connection>& conn);

  // --- subscriptions (async_client_subscriptions.cc) -----------------------------

  // A frame the server sent on its own: a pushed message, or the end of
  // every subscription on `conn`.
  void HandlePush(const std::shared_ptr<Connection>& conn, const proto::FrameView& f,
                  const std::optional<proto::ResponseView>& resp);
  // Forgets the subscriptions that lived on `conn` and tells their owners.
  void LoseSubscriptions(const std::shared_ptr<Connection>& conn, const std::string& reason);
  // The calls the public API and the SubscriptionKeeper share; any thread.
  void SubscribeRaw(std::vector<std::string> conv_ids, AsyncClient::MessageFn on_message,
                    AsyncClient::LostFn on_lost, AsyncClient::Done<bool> done);
  void UnsubscribeRaw(std::vector<std::string> conv_ids, AsyncClient::Done<bool> done);
  // Any thread (async_client_calls.cc).
  void PullRange(std::string conv_id, PullOptions o, AsyncClient::Done<PullPage> done);
  void MaxSeqs(std::vector<std::string> conv_ids, AsyncClient::Done<std::vector<int64_t>> done);
  // On the strand: the keeper, made at first use.
  SubscriptionKeeper& Keeper();

  // --- prefetch (async_client_prefetch.cc) -----------------------------------------

  // One ID of `key` from the cache, refilled in the background; waits for
  // the refill when the cache is empty.
  void NextFromCache(std::string key, std::function<void(ClientResult<IdBatch>)> done);
  void MaybeRefill(const std::string& key, KeyCache& kc);
  // Takes the first ID of kc's ranges; kc.available > 0.
  static int64_t TakeOne(KeyCache& kc);
  void OnRefill(const std::string& key, ClientResult<IdBatch> result);

  // --- closing (async_client.cc) ---------------------------------------------------

  // Closes every connection and fails every call and prefetch waiter with
  // kCancelled; later calls fail the same way.
  void DoClose();
};

}  // namespace seqd::client
