// A whole Services seam for tests, around the test's own allocator: what
// the test does not bring (key admin, message service, snowflake generator,
// metrics) is built here over memory stores and manual clocks. The
// generator built here is disabled (snowflake = off) unless the test brings
// one.
//
// Ownership: everything built here lives as long as the TestServices; what
// the test brings must outlive it. Thread safety: as the services.
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "server/msg/message_service.h"
#include "server/route/key_router.h"
#include "server/route/routed_messages.h"
#include "server/service/services.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"

namespace seqd {

struct ServiceOverrides {
  KeyAdmin* keys = nullptr;
  MessageService* messages = nullptr;
  SnowflakeGenerator* snowflake = nullptr;
  Metrics* metrics = nullptr;
  KeyRouter* router = nullptr;  // default: straight to the test's allocator
  PlacementApi* placement = nullptr;  // default: no store groups
  ClusterApi* cluster = nullptr;      // default: no cluster mode
};

class TestServices {
 public:
  TestServices(SegmentStore& store, TaskRunner& db, SegmentAllocator& ids,
               ServiceOverrides given = {})
      : keys_(given.keys ? nullptr : std::make_unique<KeyAdmin>(store, db, ids)),
        messages_(given.messages ? nullptr
                                 : std::make_unique<MessageService>(message_store_, id_store_,
                                                                    MessageServiceOptions())),
        snowflake_(given.snowflake
                       ? nullptr
                       : std::make_unique<SnowflakeGenerator>(wall_, clock_, DisabledSnowflake())),
        metrics_(given.metrics ? nullptr : std::make_unique<Metrics>("test")),
        router_(given.router ? nullptr
                             : std::make_unique<KeyRouter>(
                                   ids, given.messages ? *given.messages : *messages_)),
        routed_messages_(given.router ? *given.router : *router_,
                         given.messages ? *given.messages : *messages_),
        services_{given.router ? *given.router : *router_, routed_messages_,
                  given.keys ? *given.keys : *keys_,
                  given.snowflake ? *given.snowflake : *snowflake_,
                  given.metrics ? *given.metrics : *metrics_} {
    services_.placement = given.placement;
    services_.cluster = given.cluster;
  }

  TestServices(const TestServices&) = delete;
  TestServices& operator=(const TestServices&) = delete;

  const Services& services() const { return services_; }
  Metrics& metrics() const {
    return metrics_ ? *metrics_ : static_cast<Metrics&>(services_.metrics);
  }
  operator const Services&() const { return services_; }  // NOLINT(runtime/explicit)

 private:
  static SnowflakeOptions DisabledSnowflake() {
    SnowflakeOptions o;
    o.enabled = false;
    return o;
  }

  MemoryMessageStore message_store_;
  MemoryStore id_store_;
  ManualWallClock wall_{1'700'000'000'000};
  ManualClock clock_;
  std::unique_ptr<KeyAdmin> keys_;
  std::unique_ptr<MessageService> messages_;
  std::unique_ptr<SnowflakeGenerator> snowflake_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<KeyRouter> router_;
  RoutedMessages routed_messages_;
  Services services_;
};

}  // namespace seqd
