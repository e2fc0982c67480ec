// The HTTP API's one op table: every operation a route performs, with its
// metrics `op` label and the permission a token needs for it. Routes take op
// labels and permissions from here and nowhere else; a new route is a row
// here, a row in the route table below, a branch in ApiRouter::Route (or its
// family's Handle) and a handler.
//
// Thread safety: constant tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/scopes.h"

namespace seqd {

enum class HttpOp : uint8_t {
  kStatusPage,       // GET /
  kSeq,              // GET /seq/{key}
  kLeafSegment,      // GET /api/segment/get/{key}
  kAdmin,            // /admin/...
  kHealth,           // /healthz, /readyz
  kMetrics,          // /metrics
  kSnowflake,        // GET /snowflake, Leaf's /api/snowflake/get/{key}
  kSnowflakeDecode,  // GET /snowflake/decode/{id}, Leaf's /decodeSnowflakeId
  kMsgSend,          // POST /conversations/{c}/messages
  kMsgPull,          // GET /conversations/{c}/messages[/{seq}]
  kMsgDelete,        // DELETE /conversations/{c}/messages/{seq}
  kMsgRecall,        // POST /conversations/{c}/messages/{seq}/recall
  kMsgMinSeq,        // PUT /conversations/{c}/min_seq
  kMsgMarkRead,      // PUT /conversations/{c}/members/{u}/read_seq
  kMsgGetMember,     // GET /conversations/{c}/members/{u}
  kMsgSetMember,     // PUT /conversations/{c}/members/{u}
  kMsgMaxSeqs,       // POST /conversations/max_seqs
  kMsgSyncUser,      // POST /users/{u}/sync
  kLeafCache,        // GET /cache (Leaf's monitor: segment buffers in memory)
  kLeafDb,           // GET /db (Leaf's monitor: leaf_alloc rows)
  kMsgEvents,        // GET /conversations/{c}/events, GET /events (Server-Sent Events)
  kMaxIds,           // GET, POST /max_ids
  kMinSeqs,          // GET, POST (read), PUT /min_seqs
  kUserSeqs,         // GET, POST (read), PUT /user_seqs
  kOther,            // anything else (404s)
};

struct HttpOpRow {
  HttpOp op;
  std::string_view metric_label;  // the `op` label, one of Metrics::Ops(Interface::kHttp)
  // What the request's token must allow (for the route's key or
  // conversation, if it has one); none: anyone. /metrics needs its
  // permission only with --metrics-auth; the status page also admits a
  // metrics token.
  std::optional<Permission> permission;
};

// The row of `op`.
const HttpOpRow& HttpOpFor(HttpOp op);

// One route: a method and a path template ("{name}" stands for one path
// segment), and the op the router gives it.
struct HttpRoute {
  std::string_view method;  // "GET", "POST", "PUT" or "DELETE"
  std::string_view path;    // e.g. "/conversations/{conv}/messages"
  HttpOp op;
};

// Every method and path template the router serves, one row each: what
// docs/openapi.yaml lists under `paths` (ctest openapi_routes compares the
// two). HEAD (on every GET route) and OPTIONS (on every route) are answered
// for all routes alike and are not rows. unit_tests checks that each row
// reaches its op through ApiRouter and that no other method does.
std::span<const HttpRoute> HttpRoutes();

}  // namespace seqd
