// The one seam between the listeners and what they serve.
//
// Every listener (HTTP router, binary protocol, RESP) receives a Services
// whole and calls nothing else: a listener is a protocol adapter (bytes ->
// request -> service call -> reply bytes). server/app.cc builds the one
// Services of a process; tests build theirs over memory stores
// (tests/unit/test_services.h).
//
// Cross-cutting steps go here, once, for every interface:
//  - cluster routing ("is this key's shard mine, else forward it to its
//    owner"): every request for IDs goes through `router`, which is the
//    local allocator outside cluster mode (server/route/key_router.h);
//  - authentication and scopes ("may this token do this"): every adapter
//    turns the request's credentials into an Access (server/auth/access.h)
//    with IdentifyBy() and checks it before each service call.
//
// Ownership: Services holds references; the App (or the test) owns the
// objects and keeps them alive until every listener has drained.
// Thread safety: each service documents its own; all are safe to call from
// any network thread and never block it.
#pragma once

namespace seqd {

class SegmentAllocator;
class KeyRouter;
class KeyAdmin;
class MessageService;
class SnowflakeGenerator;
class Metrics;
class ClusterNode;
class Authenticator;

struct Services {
  SegmentAllocator& ids;           // this process's segment buffers: snapshots, options
  KeyRouter& router;               // segment IDs: Take(key, count), local or at the key's owner
  KeyAdmin& keys;                  // leaf_alloc rows: create, step, list
  MessageService& messages;        // the message store: pulls, members, status (sends and
                                   // subscriptions go through `router`)
  SnowflakeGenerator& snowflake;   // snowflake IDs; enabled() is false with snowflake = off
  Metrics& metrics;                // request counters and the /metrics page
  ClusterNode* cluster = nullptr;  // cluster mode's membership and map; null when off
  const Authenticator* auth = nullptr;  // tokens (server/auth/authenticator.h); null: open
  bool metrics_auth = false;            // /metrics needs the metrics scope
};

}  // namespace seqd
