// seqd: wires the store, the allocator and the HTTP listener, and runs them
// until SIGTERM/SIGINT, then drains and exits 0.
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <iostream>
#include <thread>

#include "server/config/config.h"
#include "server/core/allocator_gauges.h"
#include "server/core/asio_clock.h"
#include "server/core/key_admin.h"
#include "server/core/log.h"
#include "server/core/segment_allocator.h"
#include "server/core/task_runner.h"
#include "server/http/api_router.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/msg/message_service.h"
#include "server/resp/resp_server.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/snowflake/worker_lease_keeper.h"
#include "server/tcp/binary_server.h"
#include "storage/message_store_factory.h"
#include "storage/store_factory.h"
#include "storage/worker_lease_store_factory.h"

namespace seqd {
namespace {

// Runs `task` every `period` on the io_context until `stopped` is set.
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

AllocatorOptions ToAllocatorOptions(const Config& c) {
  AllocatorOptions o;
  o.prefetch_fraction = c.prefetch_fraction;
  o.wait_deadline = std::chrono::milliseconds(c.wait_deadline_ms);
  o.segment_duration = std::chrono::seconds(c.segment_duration_s);
  o.max_step = c.max_step;
  o.max_count = c.max_count;
  o.idle_timeout = std::chrono::seconds(c.key_idle_timeout_s);
  return o;
}

HttpOptions ToHttpOptions(const Config& c) {
  HttpOptions o;
  o.address = c.http_address;
  o.port = static_cast<uint16_t>(c.http_port);
  o.max_header_bytes = static_cast<size_t>(c.http_max_header_bytes);
  o.max_body_bytes = static_cast<size_t>(c.http_max_body_bytes);
  o.idle_timeout = std::chrono::seconds(c.http_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.http_max_connections);
  return o;
}

BinaryServerOptions ToBinaryOptions(const Config& c) {
  BinaryServerOptions o;
  o.address = c.tcp_address;
  o.port = static_cast<uint16_t>(c.tcp_port);
  o.max_in_flight = static_cast<size_t>(c.tcp_max_in_flight);
  o.idle_timeout = std::chrono::seconds(c.tcp_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.tcp_max_connections);
  o.max_frame_bytes = static_cast<size_t>(c.tcp_max_frame_bytes);
  o.max_output_bytes = static_cast<size_t>(c.tcp_max_output_bytes);
  o.max_subscriptions = static_cast<size_t>(c.tcp_max_subscriptions);
  return o;
}

RespServerOptions ToRespOptions(const Config& c) {
  RespServerOptions o;
  o.address = c.tcp_address;
  o.port = static_cast<uint16_t>(c.resp_port);
  o.max_in_flight = static_cast<size_t>(c.tcp_max_in_flight);
  o.idle_timeout = std::chrono::seconds(c.tcp_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.tcp_max_connections);
  return o;
}

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

MessageServiceOptions ToMessageOptions(const Config& c) {
  MessageServiceOptions o;
  o.writers = static_cast<int>(c.msg_writers);
  o.readers = static_cast<int>(c.msg_readers);
  o.max_batch = static_cast<size_t>(c.msg_max_batch);
  o.max_payload_bytes = static_cast<size_t>(c.msg_max_payload_bytes);
  o.max_queued_sends = static_cast<size_t>(c.msg_max_queued);
  return o;
}

SnowflakeOptions ToSnowflakeOptions(const Config& c) {
  SnowflakeOptions o;
  o.layout.time_bits = static_cast<int>(c.snowflake_time_bits);
  o.layout.worker_bits = static_cast<int>(c.snowflake_worker_bits);
  o.layout.sequence_bits = static_cast<int>(c.snowflake_sequence_bits);
  o.layout.epoch_ms = c.snowflake_epoch_ms;
  o.max_backward_ms = c.snowflake_max_backward_ms;
  o.max_count = c.snowflake_max_count;
  o.wait_deadline = std::chrono::milliseconds(c.wait_deadline_ms);
  return o;
}

// "<hostname>:<http_port>" unless snowflake_owner is set.
std::string SnowflakeOwner(const Config& c, uint16_t http_port) {
  if (!c.snowflake_owner.empty()) return c.snowflake_owner;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  return std::string(host) + ":" + std::to_string(http_port);
}

int Run(const Config& config) {
  SetLogLevel(*ParseLogLevel(config.log_level));
  auto store = OpenStore(config.store);
  if (!store) {
    SEQD_LOG(kError) << "cannot open store: " << store.error().message;
    return 1;
  }
  auto message_store = OpenMessageStore(config.store);
  if (!message_store) {
    SEQD_LOG(kError) << "cannot open message store: " << message_store.error().message;
    return 1;
  }
  std::unique_ptr<WorkerLeaseStore> lease_store;  // only with snowflake = on
  if (config.snowflake) {
    auto opened = OpenWorkerLeaseStore(config.store);
    if (!opened) {
      SEQD_LOG(kError) << "cannot open worker-lease store: " << opened.error().message;
      return 1;
    }
    lease_store = std::move(opened).value();
  }
  SystemWallClock wall;
  SnowflakeOptions snowflake_options = ToSnowflakeOptions(config);
  if (Status s = snowflake_options.layout.Validate(); !s) {
    SEQD_LOG(kError) << s.error().message;
    return 1;
  }
  if (config.snowflake && wall.NowMs() < snowflake_options.layout.epoch_ms) {
    SEQD_LOG(kError) << "snowflake: snowflake_epoch_ms " << config.snowflake_epoch_ms
                     << " is in the future (now is " << wall.NowMs() << "); IDs would be negative";
    return 1;
  }
  if (config.snowflake && wall.NowMs() > snowflake_options.layout.max_time_ms()) {
    SEQD_LOG(kError) << "snowflake: " << config.snowflake_time_bits << " time bits from epoch "
                     << config.snowflake_epoch_ms
                     << " ran out before now; lower snowflake_epoch_ms or add time bits";
    return 1;
  }
  Metrics metrics(SEQD_VERSION);
  MessageServiceOptions message_options = ToMessageOptions(config);
  message_options.metrics = &metrics;
  MessageService messages(**message_store, **store, message_options);

  const size_t threads = config.threads > 0 ? static_cast<size_t>(config.threads)
                                            : std::max(1u, std::thread::hardware_concurrency());
  boost::asio::io_context io(static_cast<int>(threads));
  AsioClock clock(io);
  ThreadPoolRunner db(static_cast<size_t>(config.db_threads));
  AllocatorOptions allocator_options = ToAllocatorOptions(config);
  allocator_options.metrics = &metrics;
  SegmentAllocator allocator(**store, db, clock, KeyRules(config.auto_keys), allocator_options);
  KeyAdmin admin(**store, db, allocator);
  snowflake_options.metrics = &metrics;
  SnowflakeGenerator snowflake(wall, clock, snowflake_options);
  ApiRouter router(allocator, admin, RouterOptions{SEQD_VERSION, std::chrono::steady_clock::now()});
  router.SetMessageService(&messages);
  if (config.snowflake) router.SetSnowflake(&snowflake);
  router.SetMetrics(&metrics);
  router.SetMetricsHandler([&metrics] { return metrics.Render(); });
  metrics.SetAllocatorStats([&allocator] { return CollectAllocatorGauges(allocator); });
  metrics.SetMessageStats([&messages] {
    const MessageServiceStats st = messages.stats();
    return MessageGauges{st.queued_sends, st.subscriptions};
  });
  HttpOptions http_options = ToHttpOptions(config);
  http_options.metrics = &metrics;
  HttpServer http(io, http_options, router);
  if (auto s = http.Listen(); !s) {
    SEQD_LOG(kError) << "cannot listen: " << s.error().message;
    return 1;
  }
  // Admin listener: its own router, which answers only /metrics, /,
  // /healthz and /readyz (client paths are 404 there).
  ApiRouter admin_router(allocator, admin,
                         RouterOptions{SEQD_VERSION, std::chrono::steady_clock::now(),
                                       /*admin_only=*/true});
  admin_router.SetMetrics(&metrics);
  if (config.snowflake) admin_router.SetSnowflake(&snowflake);  // its status page section
  admin_router.SetMetricsHandler([&metrics] { return metrics.Render(); });
  std::unique_ptr<HttpServer> admin_http;
  if (config.admin_port >= 0) {
    HttpOptions admin_options = ToHttpOptions(config);
    admin_options.address = config.admin_address;
    admin_options.port = static_cast<uint16_t>(config.admin_port);
    admin_options.metrics = &metrics;
    admin_http = std::make_unique<HttpServer>(io, admin_options, admin_router);
    if (auto s = admin_http->Listen(); !s) {
      SEQD_LOG(kError) << "cannot listen (admin): " << s.error().message;
      return 1;
    }
    SEQD_LOG(kInfo) << "admin (/metrics, /, /healthz, /readyz) on http://" << config.admin_address
                    << ":" << admin_http->port();
  }
  std::unique_ptr<BinaryServer> binary;
  if (config.tcp_port >= 0) {
    BinaryServerOptions binary_options = ToBinaryOptions(config);
    binary_options.metrics = &metrics;
    binary = std::make_unique<BinaryServer>(io, binary_options, allocator, &messages,
                                            config.snowflake ? &snowflake : nullptr);
    if (auto s = binary->Listen(); !s) {
      SEQD_LOG(kError) << "cannot listen (binary protocol): " << s.error().message;
      return 1;
    }
    SEQD_LOG(kInfo) << "binary protocol on " << config.tcp_address << ":" << binary->port();
  }
  std::unique_ptr<RespServer> resp;
  if (config.resp_port >= 0) {
    RespServerOptions resp_options = ToRespOptions(config);
    resp_options.metrics = &metrics;
    resp = std::make_unique<RespServer>(io, resp_options, allocator);
    if (auto s = resp->Listen(); !s) {
      SEQD_LOG(kError) << "cannot listen (RESP): " << s.error().message;
      return 1;
    }
    SEQD_LOG(kInfo) << "RESP (Redis protocol) on " << config.tcp_address << ":" << resp->port();
  }
  metrics.SetOpenConnections(Interface::kHttp, [&http] { return http.open_connections(); });
  if (binary) {
    metrics.SetOpenConnections(Interface::kBinary,
                               [&binary] { return binary->open_connections(); });
  }
  if (resp) {
    metrics.SetOpenConnections(Interface::kResp, [&resp] { return resp->open_connections(); });
  }
  // Snowflake: lease a worker id (now, and again whenever it is lost).
  std::unique_ptr<WorkerLeaseKeeper> lease_keeper;
  if (config.snowflake) {
    LeaseKeeperOptions lease_options;
    lease_options.owner = SnowflakeOwner(config, http.port());
    lease_options.max_workers = 1 << config.snowflake_worker_bits;
    lease_options.ttl = std::chrono::milliseconds(config.snowflake_lease_ms);
    lease_options.retry_interval =
        std::min<std::chrono::milliseconds>(std::chrono::seconds(1), lease_options.ttl / 10);
    lease_options.metrics = &metrics;
    lease_keeper = std::make_unique<WorkerLeaseKeeper>(*lease_store, db, clock, wall, snowflake,
                                                       lease_options);
    metrics.SetSnowflakeStats([&snowflake] {
      const SnowflakeStatus st = snowflake.status();
      return SnowflakeGauges{st.worker_id, st.serving, st.lease_left_s,
                             static_cast<int64_t>(st.parked)};
    });
  } else {
    snowflake.Revoke("snowflake IDs are turned off (snowflake = off)");
  }
  SEQD_LOG(kInfo) << "seqd " << SEQD_VERSION << " listening on http://" << config.http_address
                  << ":" << http.port()
                  << " store=" << (config.store.starts_with("mysql") ? "mysql" : config.store)
                  << " threads=" << threads << " db_threads=" << config.db_threads;

  // The MySQL store does not connect at start (the database may be down):
  // create leaf_alloc once the database answers, retrying every second.
  std::atomic<bool> schema_ready{false}, schema_pending{false};
  auto ensure_schema = [&] {
    if (schema_ready || schema_pending.exchange(true)) return;
    db.Post([&] {
      Status s = (*store)->EnsureSchema();
      if (s) s = (*message_store)->EnsureSchema();
      if (s && lease_store) s = lease_store->EnsureSchema();
      if (s) {
        schema_ready = true;
        // The lease table exists now: claim a worker id.
        if (lease_keeper) lease_keeper->Start();
      } else {
        SEQD_LOG(kWarn) << "store not ready: " << s.error().message;
      }
      schema_pending = false;
    });
  };
  ensure_schema();
  PeriodicTask schema(io, std::chrono::seconds(1), ensure_schema);

  const auto idle = std::chrono::seconds(config.key_idle_timeout_s);
  PeriodicTask evict(io, std::max<std::chrono::milliseconds>(std::chrono::seconds(1), idle / 4),
                     [&] {
                       if (size_t n = allocator.EvictIdle(); n > 0) {
                         SEQD_LOG(kDebug) << "evicted " << n << " idle keys";
                       }
                     });
  PeriodicTask refresh(io, std::chrono::seconds(config.key_refresh_interval_s), [&] {
    allocator.RefreshRegisteredKeys([](Result<size_t> dropped) {
      if (!dropped) {
        SEQD_LOG(kWarn) << "key refresh failed: " << dropped.error().message;
      } else if (*dropped > 0) {
        SEQD_LOG(kInfo) << "key refresh: " << *dropped << " deleted keys left memory";
      }
    });
  });

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    SEQD_LOG(kInfo) << "signal " << sig << ": draining";
    evict.Cancel();
    refresh.Cancel();
    schema.Cancel();
    const int listeners = 1 + (admin_http ? 1 : 0) + (binary ? 1 : 0) + (resp ? 1 : 0);
    auto latch = std::make_shared<DrainLatch>(listeners, [&] {
      allocator.Shutdown();
      messages.Shutdown();
      snowflake.Shutdown();
      if (lease_keeper) lease_keeper->Stop();  // releases the worker id (db runner)
      io.stop();
    });
    http.Stop([latch] { latch->Arrive(); });
    if (admin_http) admin_http->Stop([latch] { latch->Arrive(); });
    if (binary) binary->Stop([latch] { latch->Arrive(); });
    if (resp) resp->Stop([latch] { latch->Arrive(); });
  });

  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back([&] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  db.Stop();
  SEQD_LOG(kInfo) << "stopped";
  return 0;
}

}  // namespace
}  // namespace seqd

int main(int argc, char** argv) {
  auto config = seqd::LoadConfig(argc, argv, seqd::ProcessEnvironment());
  if (!config) {
    std::fprintf(stderr, "seqd: %s\n", config.error().message.c_str());
    return 2;
  }
  if (config->show_help) {
    std::fputs(seqd::ConfigHelp().c_str(), stdout);
    return 0;
  }
  if (config->show_version) {
    std::printf("seqd %s\n", SEQD_VERSION);
    return 0;
  }
  return seqd::Run(*config);
}
