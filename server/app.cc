// App: the process's one build order (stores, runners, services, routers,
// listeners, periodic tasks) and its drain order on SIGTERM, kept in one
// file so the two orders can be read against each other.
#include "server/app.h"

#include <malloc.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proto/shard_hash.h"
#include "server/app_options.h"
#include "server/app_security.h"
#include "server/auth/audit.h"
#include "server/base/asio_clock.h"
#include "server/base/file_limit.h"
#include "server/base/log.h"
#include "server/base/task_runner.h"
#include "server/cluster/cluster_metrics.h"
#include "server/cluster/cluster_node.h"
#include "server/cluster/shard_mover.h"
#include "server/core/allocator_gauges.h"
#include "server/core/key_admin.h"
#include "server/http/api_router.h"
#include "server/metrics/metrics.h"
#include "server/net/io_ring.h"
#include "server/net/listener.h"
#include "server/net/tls_context.h"
#include "server/route/key_router.h"
#include "server/route/peer_clients.h"
#include "server/route/push_relay.h"
#include "server/route/routed_messages.h"
#include "server/service/services.h"
#include "server/snowflake/wall_clock.h"
#include "server/snowflake/worker_lease_keeper.h"
#include "storage/grouped_shard_lease_store.h"
#include "storage/store_factory.h"

namespace seqd {
namespace {

// Runs `task` every `period` on the io_context until Cancel().
// Thread safety: Cancel() on an io_context thread.
class PeriodicTask {
 public:
  PeriodicTask(boost::asio::io_context& io, std::chrono::milliseconds period,
               std::function<void()> task)
      : timer_(io), period_(period), task_(std::move(task)) {
    Arm();
  }
  void Cancel() {
    stopped_ = true;
    timer_.cancel();
  }

 private:
  void Arm() {
    timer_.expires_after(period_);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      task_();
      Arm();
    });
  }
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds period_;
  std::function<void()> task_;
  bool stopped_ = false;
};

// Counts down the listeners still draining; runs `done` when the last is.
class DrainLatch {
 public:
  DrainLatch(int listeners, std::function<void()> done)
      : left_(listeners), done_(std::move(done)) {}
  void Arrive() {
    if (--left_ == 0) done_();
  }

 private:
  std::atomic<int> left_;
  std::function<void()> done_;
};

// Binds `listener` and adds it to `opened`; on failure, an error naming
// `what` ("" for HTTP).
Status Bind(Listener& listener, std::string_view what, std::vector<Listener*>& opened) {
  Status s = listener.Listen();
  if (s) {
    opened.push_back(&listener);
    return s;
  }
  const std::string label = what.empty() ? "" : " (" + std::string(what) + ")";
  return MakeError(s.error().code, "cannot listen" + label + ": " + s.error().message);
}

constexpr const char* kInsecureWarning =
    "insecure_no_auth: serving without tokens; anyone who can reach a listener can do "
    "everything (docs/security.md)";

size_t NetworkThreads(const Config& c) {
  return c.threads > 0 ? static_cast<size_t>(c.threads)
                       : std::max(1u, std::thread::hardware_concurrency());
}

// The io_contexts of network threads 2..N (the first runs App::Parts::io),
// each to be run by exactly one thread.
std::vector<std::unique_ptr<boost::asio::io_context>> ThreadContexts(size_t threads) {
  std::vector<std::unique_ptr<boost::asio::io_context>> out;
  for (size_t i = 1; i < threads; ++i) out.push_back(std::make_unique<boost::asio::io_context>(1));
  return out;
}

// Every network thread's io_context: where connections are spread.
std::vector<boost::asio::io_context*> AllContexts(
    boost::asio::io_context& first,
    const std::vector<std::unique_ptr<boost::asio::io_context>>& rest) {
  std::vector<boost::asio::io_context*> out{&first};
  for (const auto& io : rest) out.push_back(io.get());
  return out;
}

// Refuses snowflake settings that could never serve now.
Status CheckSnowflakeLayout(const Config& config, const SnowflakeOptions& o,
                            const WallClock& wall) {
  if (Status s = o.layout.Validate(); !s) return s;
  if (!config.snowflake) return OkStatus();
  if (wall.NowMs() < o.layout.epoch_ms) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "snowflake: snowflake_epoch_ms " + std::to_string(config.snowflake_epoch_ms) +
                         " is in the future (now is " + std::to_string(wall.NowMs()) +
                         "); IDs would be negative");
  }
  if (wall.NowMs() > o.layout.max_time_ms()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "snowflake: " + std::to_string(config.snowflake_time_bits) +
                         " time bits from epoch " + std::to_string(config.snowflake_epoch_ms) +
                         " ran out before now; lower snowflake_epoch_ms or add time bits");
  }
  return OkStatus();
}

// The open files every listener's connection cap needs, plus the database
// connections and some slack.
uint64_t OpenFilesWanted(const Config& c) {
  const int listeners_tcp = (c.tcp_port >= 0 ? 1 : 0) + (c.resp_port >= 0 ? 1 : 0);
  return static_cast<uint64_t>(c.http_max_connections * (c.admin_port >= 0 ? 2 : 1) +
                               c.tcp_max_connections * listeners_tcp + 2 * c.db_threads + 256);
}

// Raises the open-files limit to what the caps need (server/base/file_limit.h)
// and warns only if it is still short: the hard limit is lower and this
// process may not raise it.
void RaiseFileLimit(const Config& c) {
  const FileLimitOutcome o = RaiseProcessFileLimit(OpenFilesWanted(c));
  if (!o.enough()) {
    SEQD_LOG(kWarn) << "open files limit " << o.after.soft << " (hard " << o.after.hard
                    << ") is below the " << o.want
                    << " the connection caps need: raise the hard limit (LimitNOFILE= in a "
                       "systemd unit, --ulimit nofile= for a container) or lower "
                       "http_max_connections and tcp_max_connections";
  } else if (o.raised()) {
    SEQD_LOG(kDebug) << "open files limit raised from " << o.before.soft << " (hard "
                     << o.before.hard << ") to " << o.after.soft << " (hard " << o.after.hard
                     << ")";
  }
}

// Reloads the TLS certificate, key and client CA (new connections use
// them; open ones keep theirs) and says how it went.
void ReloadTls(TlsContextHolder& tls) {
  Status s = tls.Reload();
  AuditEvent e;
  e.interface = "config";
  e.action = "tls_reload";
  e.target = tls.files().cert;
  e.outcome = s ? "ok" : "failed";
  if (!s) e.new_value = s.error().message;
  Audit(e);
  if (!s) {
    SEQD_LOG(kError) << "SIGHUP: TLS certificate kept as it was: " << s.error().message;
  }
}

// Reloads the tokens file and says how it went, in the log and the audit
// trail.
void ReloadTokens(Authenticator& auth) {
  if (!auth.enabled()) {
    SEQD_LOG(kInfo) << "SIGHUP: no tokens file to reload";
    return;
  }
  Status s = auth.Reload();
  AuditEvent e;
  e.interface = "config";
  e.action = "tokens_reload";
  e.target = auth.path();
  e.outcome = s ? "ok" : "failed";
  e.new_value = s ? std::to_string(auth.size()) + " tokens" : s.error().message;
  Audit(e);
  if (!s) {
    SEQD_LOG(kError) << "SIGHUP: tokens file kept as it was: " << s.error().message;
  }
}

}  // namespace

// Member order is build order; destruction runs in reverse, so nothing is
// destroyed while something built after it can still reach it.
struct App::Parts {
  explicit Parts(const Config& c)
      : config(c),
        metrics(SEQD_VERSION),
        thread_io(ThreadContexts(NetworkThreads(c))),
        io(1),
        clock(io),
        connections(AllContexts(io, thread_io)) {}

  const Config config;
  OpenedStores stores;
  SystemWallClock wall;
  Metrics metrics;
  // One io_context per network thread, each run by that thread alone
  // (concurrency hint 1). `io` (the first thread's) also runs the acceptors,
  // timers (clock), signals, periodic tasks and peer clients; connections
  // are spread over all of them (`connections`), so a connection's handlers
  // never wake another thread. thread_io is built first and destroyed last:
  // a handler `io` destroys may still own a connection bound to one.
  std::vector<std::unique_ptr<boost::asio::io_context>> thread_io;
  boost::asio::io_context io;
  AsioClock clock;
  IoRing connections;
  std::optional<ThreadPoolRunner> db;
  std::unique_ptr<Authenticator> auth;    // tokens; open without a tokens file
  std::shared_ptr<TlsContextHolder> tls;  // null without tls_cert
  std::optional<ClusterMetrics> cluster_metrics;
  // Cluster mode only. The peers outlive the node (its thread nudges them).
  std::optional<PeerClients> peers;
  std::unique_ptr<ClusterNode> cluster;
  // Store groups only: moves shards between groups (its thread nudges the
  // peers).
  std::unique_ptr<ShardMover> mover;
  std::optional<MessageService> messages;
  std::optional<PushRelay> relay;  // cluster mode only
  std::optional<SegmentAllocator> allocator;
  std::optional<DenseAllocator> dense;
  std::optional<KeyRouter> key_router;
  std::optional<RoutedMessages> routed_messages;  // MessageApi over the router and the service
  std::optional<KeyAdmin> admin;
  std::optional<SnowflakeGenerator> snowflake;
  std::optional<Services> services;
  std::optional<ApiRouter> router;
  std::optional<ApiRouter> admin_router;
  std::optional<HttpServer> http;
  std::unique_ptr<HttpServer> admin_http;
  std::unique_ptr<BinaryServer> binary;
  std::unique_ptr<RespServer> resp;
  // The listeners above that are bound, in the order they were: all drained
  // together at stop.
  std::vector<Listener*> listeners;
  std::unique_ptr<WorkerLeaseKeeper> lease_keeper;
  std::atomic<bool> schema_ready{false}, schema_pending{false};
  // Threads opening the pool's connections once the schema is ready, and
  // how many have not finished (-1: the schema not tried yet; 0 also while
  // it fails).
  std::vector<std::thread> warm;
  std::atomic<int> warm_left{-1};
};

App::App(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}
App::~App() = default;

// The listeners' TLS, and cluster mode's token for its peers.
struct App::Security {
  std::string peer_token;
  TlsListeners tls_use;
};

Result<std::unique_ptr<App>> App::Create(const Config& config) {
  auto p = std::make_unique<Parts>(config);
  Result<Security> security = SetUpSecurity(*p);
  if (!security) return security.error();
  if (Status s = OpenStorage(*p); !s) return s.error();
  if (config.cluster) {
    if (Status s = JoinCluster(*p, *security); !s) return s.error();
  }
  BuildServices(*p);
  WatchServices(*p);
  if (Status s = OpenListeners(*p, *security); !s) return s.error();
  StartLeases(*p);
  SEQD_LOG(kInfo) << "seqd " << SEQD_VERSION << " listening on http://" << config.http_address
                  << ":" << p->http->port()
                  << " store=" << (config.store.starts_with("mysql") ? "mysql" : config.store)
                  << " threads=" << NetworkThreads(config) << " db_threads=" << config.db_threads;
  return std::unique_ptr<App>(new App(std::move(p)));
}

// Tokens, the exposure rules, the open-files limit, the cluster token and
// the TLS contexts.
Result<App::Security> App::SetUpSecurity(Parts& p) {
  const Config& config = p.config;
  auto auth = LoadAuthenticator(config);
  if (!auth) return auth.error();
  p.auth = std::move(auth).value();
  if (Status s = CheckExposure(config, p.auth->enabled()); !s) return s.error();
  RaiseFileLimit(config);
  auto peer_token = ReadClusterToken(config, p.auth->enabled());
  if (!peer_token) return peer_token.error();
  auto tls_use = ParseTlsListeners(config);
  if (!tls_use) return tls_use.error();
  if (!config.tls_cert.empty() || !config.tls_key.empty()) {
    if (config.tls_cert.empty() || config.tls_key.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "TLS needs both tls_cert and tls_key");
    }
    auto tls = TlsContextHolder::Load({config.tls_cert, config.tls_key, config.tls_client_ca});
    if (!tls) return tls.error();
    p.tls = std::move(tls).value();
  } else if (!config.tls_client_ca.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "tls_client_ca needs tls_cert and tls_key");
  }
  CountAuthFailures(*p.auth, p.metrics.registry());
  if (p.auth->enabled()) {
    SEQD_LOG(kInfo) << "tokens: " << p.auth->size() << " loaded from " << config.tokens_file
                    << "; every listener requires one (SIGHUP reloads)";
  } else if (config.insecure_no_auth) {
    SEQD_LOG(kWarn) << kInsecureWarning;
  }
  return Security{std::move(peer_token).value(), *tls_use};
}

// The stores, and the snowflake layout checked against the clock.
Status App::OpenStorage(Parts& p) {
  const Config& config = p.config;
  // A store transaction may be retried (lost connection, conflict) within
  // the time a request waits.
  StoreNeeds needs;
  needs.connections = static_cast<int>(config.db_threads);
  needs.worker_leases = config.snowflake;
  needs.retry_budget_ms = static_cast<int>(config.wait_deadline_ms);
  needs.password = config.store_password;  // store_password(_file): overrides the URL's
  needs.cluster = config.cluster;
  // A lease round's retries must leave time for the next round.
  needs.cluster_retry_budget_ms = static_cast<int>(config.cluster_lease_ms / 4);
  needs.groups = config.store_groups;
  needs.shard_of = &proto::ShardOfKey;
  const std::string& spec =
      config.store_groups.size() == 1 ? config.store_groups.front().second : config.store;
  auto stores = OpenStores(spec, needs);
  if (!stores) {
    return MakeError(stores.error().code, "cannot open store: " + stores.error().message);
  }
  p.stores = std::move(stores).value();
  if (p.stores.grouped_leases != nullptr) {
    // A database that is another group's refuses the start; one that does
    // not answer yet is checked again before the cluster's first round.
    Status claimed = p.stores.grouped_leases->ClaimGroups();
    if (!claimed && claimed.error().code == ErrorCode::kFailedPrecondition) {
      return MakeError(ErrorCode::kInvalidArgument, claimed.error().message);
    }
  }
  SnowflakeOptions snowflake_options = ToSnowflakeOptions(config);
  return CheckSnowflakeLayout(config, snowflake_options, p.wall);
}

// Cluster mode: the node (not started yet) and the clients to its peers.
Status App::JoinCluster(Parts& p, Security& security) {
  const Config& config = p.config;
  p.cluster_metrics.emplace(p.metrics.registry());
  p.cluster = std::make_unique<ClusterNode>(*p.stores.shard_leases, p.clock,
                                            ToClusterOptions(config), &*p.cluster_metrics);
  PeerCredentials credentials;
  credentials.token = std::move(security.peer_token);
  credentials.tls = p.tls && security.tls_use.binary;
  if (credentials.tls) {
    credentials.tls_ca_file = config.cluster_tls_ca;
    if (!config.tls_client_ca.empty()) {  // the peers want a client certificate: ours
      credentials.tls_cert_file = config.tls_cert;
      credentials.tls_key_file = config.tls_key;
    }
  }
  // A forward that gets no answer within a quarter of the deadline is
  // routed again (the owner may be frozen and the map about to move).
  p.peers.emplace(p.io.get_executor(),
                  std::chrono::milliseconds(std::max<int64_t>(100, config.wait_deadline_ms / 4)),
                  std::move(credentials));
  if (Status s = p.peers->CheckCredentials(); !s) return s;
  p.cluster->SetNudger(
      [peers = &*p.peers](const std::string& address, std::function<void()> answered) {
        peers->Nudge(address, std::move(answered));
      });
  if (p.stores.grouped_leases != nullptr) {
    WatchPlacement(p);
    BuildShardMover(p);
  }
  if (p.stores.placement) {
    // A read or write refused in a group its shard left: the placement is
    // read again at a round soon, so the caller's retry goes to the new
    // group. The node and its metrics outlive every store call (Run stops
    // the database threads; the message service is destroyed first).
    p.stores.placement->SetStaleHook(
        [cluster = p.cluster.get(), metrics = &*p.cluster_metrics](StaleAccess access) {
          if (access == StaleAccess::kRead) {
            metrics->MovedReadRefused();
          } else {
            metrics->MovedWriteRefused();
          }
          cluster->RefreshSoon();
        });
  }
  return OkStatus();
}

// Store groups: the node reads the placement when its poll says so, and
// sooner when a peer tells a newer version (PeerClients hears it in their
// replies, the binary listener in their requests, the mover in its own
// changes); every request to a peer tells it this instance's version; the
// gauge follows the version read.
void App::WatchPlacement(Parts& p) {
  const StorePlacement* placement = p.stores.placement.get();
  GroupedShardLeaseStore* leases = p.stores.grouped_leases;
  ClusterNode* node = p.cluster.get();
  node->SetPlacementReader(PlacementReader{[leases] { return leases->RefreshPlacement(); },
                                           [placement] { return placement->version(); }});
  node->SetRoundHook([metrics = &*p.cluster_metrics, placement] {
    metrics->PlacementVersion(placement->version());
  });
  p.peers->SetPlacement(PeerPlacement{[placement] { return placement->version(); },
                                      [node](int64_t version) { node->HeardPlacement(version); }});
}

// Store groups: the shard mover on each group's stores; a placement change
// wakes every live member's lease round.
void App::BuildShardMover(Parts& p) {
  std::vector<ShardLeaseStore*> leases;
  std::vector<ShardDataStore*> data;
  for (size_t i = 0; i < p.stores.group_data.size(); ++i) {
    leases.push_back(&p.stores.grouped_leases->leases(i));
    data.push_back(p.stores.group_data[i].get());
  }
  ShardMoverOptions options;
  options.lease = std::chrono::milliseconds(p.config.cluster_lease_ms);
  options.max_drift = p.cluster->max_drift();
  options.metrics = &*p.cluster_metrics;
  options.heard = [node = p.cluster.get()](int64_t version) { node->HeardPlacement(version); };
  options.nudge_all = [cluster = p.cluster.get(), peers = &*p.peers] {
    cluster->Nudge();
    const auto snap = cluster->snapshot();
    if (!snap) return;
    for (const auto& [id, member] : snap->members) {
      if (member.live && id != cluster->instance()) peers->Nudge(member.advertise, [] {});
    }
  };
  p.mover =
      std::make_unique<ShardMover>(*p.stores.placement, p.stores.grouped_leases->home_placement(),
                                   std::move(leases), std::move(data), std::move(options));
}

// The message service, the database runner, the allocators, the router,
// key admin, the snowflake generator, and the seam over them.
void App::BuildServices(Parts& p) {
  const Config& config = p.config;
  MessageServiceOptions message_options = ToMessageOptions(config);
  message_options.metrics = &p.metrics;
  message_options.gate = p.cluster.get();
  p.messages.emplace(*p.stores.messages, *p.stores.segments, message_options);
  // Bounded: beyond db_queue_max waiting calls, new ones fail at once
  // (server/base/task_runner.h).
  p.db.emplace(static_cast<size_t>(config.db_threads), static_cast<size_t>(config.db_queue_max));
  AllocatorOptions allocator_options = ToAllocatorOptions(config);
  allocator_options.metrics = &p.metrics;
  allocator_options.gate = p.cluster.get();
  p.allocator.emplace(*p.stores.segments, *p.db, p.clock, KeyRules(config.auto_keys),
                      allocator_options);
  DenseOptions dense_options = ToDenseOptions(config);
  dense_options.gate = p.cluster.get();
  dense_options.metrics = &p.metrics;
  p.dense.emplace(*p.stores.segments, *p.db, p.clock, KeyRules(config.auto_keys), dense_options);
  if (p.cluster) {
    p.relay.emplace(*p.messages, *p.cluster, *p.peers);
    p.key_router.emplace(*p.allocator, *p.messages, *p.cluster, *p.peers, *p.relay, p.clock,
                         &*p.cluster_metrics, &*p.dense);
  } else {
    p.key_router.emplace(*p.allocator, *p.messages, &*p.dense);
  }
  p.admin.emplace(*p.stores.segments, *p.db, *p.allocator,
                  [&messages = *p.messages](std::string_view key) { messages.OnKeyCreated(key); });
  SnowflakeOptions snowflake_options = ToSnowflakeOptions(config);
  snowflake_options.metrics = &p.metrics;
  p.snowflake.emplace(p.wall, p.clock, snowflake_options);
  p.routed_messages.emplace(*p.key_router, *p.messages);
  p.services.emplace(Services{*p.key_router, *p.routed_messages, *p.admin, *p.snowflake, p.metrics,
                              p.cluster.get(), p.auth.get(), config.metrics_auth, p.mover.get()});
}

// The scrape-time gauges of the allocators and the message service.
void App::WatchServices(Parts& p) {
  Metrics& metrics = p.metrics;
  SegmentAllocator& allocator = *p.allocator;
  MessageService& messages = *p.messages;
  metrics.SetAllocatorStats([&allocator] { return CollectAllocatorGauges(allocator); });
  metrics.SetDenseStats([&dense = *p.dense] {
    const DenseStats st = dense.stats();
    return DenseGauges{st.requests, st.transactions, st.replayed, st.failures, st.waiting_now};
  });
  metrics.SetMessageStats([&messages] {
    const MessageServiceStats st = messages.stats();
    return MessageGauges{st.queued_sends, st.subscriptions};
  });
}

// The HTTP, admin, binary and RESP listeners, bound (not serving yet), and
// their open-connection gauges.
Status App::OpenListeners(Parts& p, const Security& security) {
  const Config& config = p.config;
  const Services& services = *p.services;
  const TlsListeners& tls_use = security.tls_use;
  // The TLS context of a listener, or null.
  auto tls_for = [&](bool used) { return used ? p.tls : nullptr; };
  // `options` with the connections spread over the network threads'
  // io_contexts, and TLS if `tls`.
  auto on_network_threads = [&](auto options, bool tls) {
    options.connections = &p.connections;
    options.tls = tls_for(tls);
    return options;
  };
  const auto started = std::chrono::steady_clock::now();
  // Ready once the pool's connections are open (or could not be).
  auto warming = [parts = &p] { return parts->warm_left.load() != 0; };
  p.router.emplace(services, RouterOptions{SEQD_VERSION, started, false, warming,
                                           ToStreamOptions(config, &p.clock)});
  HttpOptions http_options = ToHttpOptions(config);
  // Each network thread runs its own io_context (Run()): a connection's
  // handlers all run on one thread.
  http_options.single_threaded = true;
  p.http.emplace(p.io, on_network_threads(std::move(http_options), tls_use.http), *p.router);
  if (Status s = Bind(*p.http, "", p.listeners); !s) return s;
  // Admin listener: its own router, which answers only /metrics, /,
  // /healthz, /readyz and /admin/cluster (client paths are 404 there).
  if (config.admin_port >= 0) {
    p.admin_router.emplace(services,
                           RouterOptions{SEQD_VERSION, started, /*admin_only=*/true, warming});
    HttpOptions admin_options = ToAdminOptions(config);
    admin_options.tls = tls_for(tls_use.admin);
    admin_options.single_threaded = true;  // its connections all on `io`
    p.admin_http = std::make_unique<HttpServer>(p.io, admin_options, *p.admin_router);
    if (Status s = Bind(*p.admin_http, "admin", p.listeners); !s) return s;
    SEQD_LOG(kInfo) << "admin (/metrics, /, /healthz, /readyz, /admin/cluster) on http://"
                    << config.admin_address << ":" << p.admin_http->port();
  }
  if (config.tcp_port >= 0) {
    p.binary = std::make_unique<BinaryServer>(
        p.io, on_network_threads(ToBinaryOptions(config), tls_use.binary), services);
    if (Status s = Bind(*p.binary, "binary protocol", p.listeners); !s) return s;
    SEQD_LOG(kInfo) << "binary protocol on " << config.tcp_address << ":" << p.binary->port();
  }
  if (config.resp_port >= 0) {
    p.resp = std::make_unique<RespServer>(
        p.io, on_network_threads(ToRespOptions(config), tls_use.resp), services);
    if (Status s = Bind(*p.resp, "RESP", p.listeners); !s) return s;
    SEQD_LOG(kInfo) << "RESP (Redis protocol) on " << config.tcp_address << ":" << p.resp->port();
  }
  auto gauge = [&metrics = p.metrics](Interface i, const Listener* listener) {
    if (!listener) return;
    metrics.SetOpenConnections(i, [listener] { return listener->open_connections(); });
  };
  gauge(Interface::kHttp, &*p.http);
  gauge(Interface::kBinary, p.binary.get());
  gauge(Interface::kResp, p.resp.get());
  return OkStatus();
}

// The snowflake worker-id lease (or snowflake off) and cluster mode's node.
void App::StartLeases(Parts& p) {
  const Config& config = p.config;
  SnowflakeGenerator& snowflake = *p.snowflake;
  if (config.snowflake) {
    LeaseKeeperOptions lease_options;
    lease_options.owner = SnowflakeOwner(config, p.http->port());
    lease_options.max_workers = 1 << config.snowflake_worker_bits;
    lease_options.ttl = std::chrono::milliseconds(config.snowflake_lease_ms);
    lease_options.retry_interval =
        std::min<std::chrono::milliseconds>(std::chrono::seconds(1), lease_options.ttl / 10);
    lease_options.metrics = &p.metrics;
    // Its own thread (and the lease store's own connection): a flood of
    // store work on the db runner never delays a renewal.
    p.lease_keeper = std::make_unique<WorkerLeaseKeeper>(*p.stores.leases, p.clock, p.wall,
                                                         snowflake, lease_options);
    p.metrics.SetSnowflakeStats([&snowflake] {
      const SnowflakeStatus st = snowflake.status();
      return SnowflakeGauges{st.worker_id, st.serving, st.lease_left_s,
                             static_cast<int64_t>(st.parked)};
    });
  } else {
    snowflake.Revoke("snowflake IDs are turned off (snowflake = off)");
  }
  if (p.cluster) {
    // Peers reach us at the binary port actually bound (--tcp-port 0 too).
    const std::string advertise = AdvertisedAddress(config, p.binary->port());
    p.cluster->Start(advertise);
    SEQD_LOG(kInfo) << "cluster mode: instance " << p.cluster->instance() << " at " << advertise
                    << ", lease " << config.cluster_lease_ms << " ms";
  }
}

int App::Run() {
  Parts& p = *parts_;
  // The MySQL stores do not connect at start (the database may be down):
  // create the tables once the database answers, retrying every second.
  auto ensure_schema = [&p] {
    if (p.schema_ready || p.schema_pending.exchange(true)) return;
    p.db->Post([&p] {
      Status s = p.stores.EnsureSchemas();
      if (s) {
        p.schema_ready = true;
        // The lease table exists now: claim a worker id.
        if (p.lease_keeper) p.lease_keeper->Start();
        // Open and ready the pool's connections now, one per database
        // thread, on threads of their own (the database threads stay free):
        // the first reservations would otherwise wait for those round
        // trips. /readyz waits for it (best effort: an error ends it).
        p.warm_left = p.config.db_threads;
        for (int i = 0; i < p.config.db_threads; ++i) {
          p.warm.emplace_back([&p] {
            if (Status w = p.stores.segments->Warm(); !w) {
              SEQD_LOG(kDebug) << "warming a database connection: " << w.error().message;
            }
            --p.warm_left;
          });
        }
      } else {
        SEQD_LOG(kWarn) << "store not ready: " << s.error().message;
        // Readiness is the store's answer alone until the tables exist (a
        // user without CREATE rights on a Leaf table must not stay unready).
        int not_started = -1;
        p.warm_left.compare_exchange_strong(not_started, 0);
      }
      p.schema_pending = false;
    });
  };
  ensure_schema();
  PeriodicTask schema(p.io, std::chrono::seconds(1), ensure_schema);

  const auto idle = std::chrono::seconds(p.config.key_idle_timeout_s);
  PeriodicTask evict(p.io, std::max<std::chrono::milliseconds>(std::chrono::seconds(1), idle / 4),
                     [&p] {
                       if (size_t n = p.allocator->EvictIdle(); n > 0) {
                         SEQD_LOG(kDebug) << "evicted " << n << " idle keys";
                       }
                     });
  // Dense keys' request tokens older than their retention are forgotten.
  const auto retention = std::chrono::seconds(p.config.dense_token_retention_s);
  PeriodicTask prune_tokens(p.io, std::min<std::chrono::seconds>(std::chrono::hours(1), retention / 4),
                            [&p, retention] {
                              p.dense->PruneTokens(retention, [](Result<int64_t> pruned) {
                                if (!pruned) {
                                  SEQD_LOG(kWarn) << "pruning dense tokens failed: "
                                                  << pruned.error().message;
                                }
                              });
                            });
  // Cluster mode: push relays follow their conversations' owners.
  std::optional<PeriodicTask> relay;
  if (p.relay) relay.emplace(p.io, std::chrono::milliseconds(100), [&p] { p.relay->Reconcile(); });
  PeriodicTask refresh(p.io, std::chrono::seconds(p.config.key_refresh_interval_s), [&p] {
    p.allocator->RefreshRegisteredKeys([](Result<size_t> dropped) {
      if (!dropped) {
        SEQD_LOG(kWarn) << "key refresh failed: " << dropped.error().message;
      } else if (*dropped > 0) {
        SEQD_LOG(kInfo) << "key refresh: " << *dropped << " deleted keys left memory";
      }
    });
  });

  // Freed memory back to the system once a minute: churn (keys evicted,
  // connections and streams ending, on many threads' malloc arenas) leaves
  // free pages resident that RSS never gives back (docs/operations.md,
  // "Memory"). On a database thread: with a large heap it takes a while.
  PeriodicTask trim(p.io, std::chrono::minutes(1), [&p] { p.db->Post([] { malloc_trim(0); }); });

  // Open on purpose: say so every hour, not only at start.
  std::optional<PeriodicTask> insecure;
  if (!p.auth->enabled() && p.config.insecure_no_auth) {
    insecure.emplace(p.io, std::chrono::hours(1), [] { SEQD_LOG(kWarn) << kInsecureWarning; });
  }
  // SIGHUP: read the tokens file again (on a database thread: it is file
  // I/O); a bad file keeps the tokens loaded now.
  boost::asio::signal_set hangup(p.io, SIGHUP);
  std::function<void()> await_hangup = [&] {
    hangup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      p.db->Post([&p] {
        ReloadTokens(*p.auth);
        if (p.tls) ReloadTls(*p.tls);
      });
      await_hangup();
    });
  };
  await_hangup();

  boost::asio::signal_set signals(p.io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    SEQD_LOG(kInfo) << "signal " << sig << ": draining";
    evict.Cancel();
    prune_tokens.Cancel();
    trim.Cancel();
    refresh.Cancel();
    hangup.cancel();
    if (insecure) insecure->Cancel();
    if (relay) relay->Cancel();
    schema.Cancel();
    auto drain_listeners = [&p] {
      const int listeners = static_cast<int>(p.listeners.size());
      auto latch = std::make_shared<DrainLatch>(listeners, [&p] {
        p.allocator->Shutdown();
        p.dense->Shutdown();
        p.messages->Shutdown();
        p.snowflake->Shutdown();
        if (p.peers) p.peers->Close();
        if (p.lease_keeper) p.lease_keeper->Stop();  // releases the worker id (its runner)
        p.io.stop();
      });
      for (Listener* listener : p.listeners) listener->Stop([latch] { latch->Arrive(); });
    };
    if (!p.cluster) return drain_listeners();
    // Cluster mode: hand every shard to its next owner first (it takes them
    // at once); requests still arriving are forwarded there while we drain.
    p.cluster->Leave([&p, drain_listeners] { boost::asio::post(p.io, drain_listeners); });
  });

  // Network threads 2..N, each on its own io_context (kept running while
  // idle); this thread runs `io`. The drain above stops `io` once every
  // listener is empty: no connection is left on the others, so they stop too.
  std::vector<std::thread> pool;
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> busy;
  for (auto& io : p.thread_io) {
    busy.push_back(boost::asio::make_work_guard(*io));
    pool.emplace_back([io = io.get()] { io->run(); });
  }
  p.io.run();
  for (auto& io : p.thread_io) io->stop();
  for (auto& t : pool) t.join();
  if (p.cluster) p.cluster->Stop();
  p.db->Stop();
  for (auto& t : p.warm) t.join();
  SEQD_LOG(kInfo) << "stopped";
  return 0;
}

}  // namespace seqd
