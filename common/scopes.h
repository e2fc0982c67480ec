// What a token may do (docs/security.md): a list of scopes, each a
// permission and, for the keyed ones, a key prefix ("*" for every key).
//
//   admin                 key create, step and delete, the cache dump,
//                         snowflake admin, the status page, /admin/cluster
//   ids:<prefix>          NEXT_IDS, GET /seq, Leaf's routes, RESP INCR/INCRBY
//   snowflake             snowflake IDs and decoding
//   msg:send:<prefix>     message sends
//   msg:read:<prefix>     pulls, gets, bounds, SUBSCRIBE
//   msg:admin:<prefix>    min/max seq, windows, recall and delete
//   metrics               /metrics (only when --metrics-auth is on)
//   cluster               what a cluster peer sends another: forwarded
//                         NEXT_IDS and sends, push relays (ids, msg:send and
//                         msg:read on every key) and nudges
//
// Thread safety: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace seqd {

enum class Permission {
  kAdmin,
  kIds,
  kSnowflake,
  kMsgSend,
  kMsgRead,
  kMsgAdmin,
  kMetrics,
  kCluster,
};

// "ids", "msg:send", ...: as written in a scope (and in audit lines).
std::string_view PermissionName(Permission p);

struct Scope {
  Permission permission = Permission::kAdmin;
  std::string prefix;  // keyed permissions: keys starting with it; "" with all_keys
  bool all_keys = true;

  bool operator==(const Scope& o) const = default;
};

// A token id: 1-64 of [A-Za-z0-9_.-].
bool ValidTokenId(std::string_view id);

// One scope as written in a tokens file. Keyed permissions need a prefix
// ("ids:order_", "ids:*"); the others take none.
Result<Scope> ParseScope(std::string_view text);
// A comma-separated list (no spaces), at least one scope.
Result<std::vector<Scope>> ParseScopes(std::string_view text);

// True if some scope allows `p` for `key` ("" for unkeyed permissions; a
// keyed permission with key "" is allowed only by an all-keys scope). The
// cluster scope also allows ids, msg:send and msg:read on every key.
bool Allows(const std::vector<Scope>& scopes, Permission p, std::string_view key);

}  // namespace seqd
