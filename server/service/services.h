// The one seam between the listeners and what they serve.
//
// Every listener (HTTP router, binary protocol, RESP) receives a Services
// whole and calls nothing else: a listener is a protocol adapter (bytes ->
// request -> service call -> reply bytes). Each member is an abstract
// interface of this folder, so a listener links only the seam, net, proto
// and base: server/app.cc builds the one Services of a process over the
// real allocator, router and stores; tests build theirs over memory stores
// (tests/unit/test_services.h) or over stubs (tests/unit/stub_services.h).
//
// Cross-cutting steps go here, once, for every interface:
//  - cluster routing ("is this key's shard mine, else forward it to its
//    owner"): every request for IDs, every send and subscription goes
//    through the router behind `ids` and `messages`, which serves locally
//    outside cluster mode (server/route/key_router.h);
//  - checks: a take's count, key and token are checked once, by `ids`
//    (KeyRouter::Take); message ids and fields once, by `messages` (the
//    message service); a listener only parses;
//  - authentication and scopes ("may this token do this"): every adapter
//    turns the request's credentials into an Access (server/auth/access.h)
//    with IdentifyBy() and checks it before each service call.
//
// Ownership: Services holds references; the App (or the test) owns the
// objects and keeps them alive until every listener has drained.
// Thread safety: each service documents its own; all are safe to call from
// any network thread and never block it.
#pragma once

#include "server/service/cluster_api.h"
#include "server/service/id_api.h"
#include "server/service/key_admin_api.h"
#include "server/service/message_api.h"
#include "server/service/placement_api.h"
#include "server/service/request_metrics.h"
#include "server/service/snowflake_api.h"

namespace seqd {

class Authenticator;

struct Services {
  IdApi& ids;                           // segment and dense IDs, at the key's owner; key snapshots
  MessageApi& messages;                 // sends and subscriptions at the owner; pulls, members here
  KeyAdminApi& keys;                    // leaf_alloc rows: create, step, list
  SnowflakeApi& snowflake;              // snowflake IDs; enabled() is false with snowflake = off
  RequestMetrics& metrics;              // request counters and the /metrics page
  ClusterApi* cluster = nullptr;        // cluster mode's membership and map; null when off
  const Authenticator* auth = nullptr;  // tokens (server/auth/authenticator.h); null: open
  bool metrics_auth = false;            // /metrics needs the metrics scope
  PlacementApi* placement = nullptr;    // store groups' placement and mover; null without
};

}  // namespace seqd
