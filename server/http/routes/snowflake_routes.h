// HTTP endpoints of snowflake IDs (docs/snowflake.md), served by ApiRouter:
//
//   GET /snowflake[?count=N]                  {"id":"…","ids":["…"]} ("id" only when
//                                             N is 1), or the IDs one per line when
//                                             the client prefers text/plain
//   GET /snowflake/decode/{id}                {"id":"…","time_ms":…,"time":"…Z",
//                                             "worker":…,"sequence":…}
//   GET /api/snowflake/get/{key}              Leaf's: the bare ID as text/plain
//   GET /decodeSnowflakeId?snowflakeId={id}   Leaf's: {"timestamp":"ms(date)",
//                                             "sequenceId":"…","workerId":"…"}
//   GET /admin/snowflake                      the generator's state (SnowflakeStatus
//                                             and the layout) as JSON
//
// IDs are JSON strings: 64-bit IDs exceed what a JavaScript number holds
// exactly (2^53). Dates are UTC (Leaf printed the JVM's zone). Leaf's key is
// checked like any key and otherwise ignored, as in Leaf; unlike Leaf's
// blanket 500, errors are the API's JSON error with their own status (400
// invalid_argument, 503 not_serving, 503 shutting_down). Without a generator
// every one of these paths answers 404 not_found; other methods than GET
// answer 405.
//
// Thread safety: Handle() is safe from any thread; `respond` runs exactly
// once, on the calling thread or on the generator's timer thread.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/http_ops.h"
#include "server/http/http_util.h"

namespace seqd {

class SnowflakeApi;

class SnowflakeRoutes {
 public:
  struct Reply {
    boost::beast::http::status status = boost::beast::http::status::ok;
    bool text = false;  // text/plain; else application/json
    std::string body;
    std::string allow;      // non-empty only for 405 answers (the Allow header)
    std::string_view code;  // errors: the `code` of the body (the metric status); else empty
  };
  using Respond = std::function<void(Reply)>;

  // `generator` (nullptr: the paths answer 404) must outlive the routes and
  // every pending call.
  explicit SnowflakeRoutes(SnowflakeApi* generator) : generator_(generator) {}

  // The generator, or nullptr when snowflake IDs are off.
  const SnowflakeApi* generator() const { return generator_; }

  // The op (server/http/http_ops.h) of a snowflake path (kSnowflake for the
  // ones that issue IDs, kSnowflakeDecode for the two that decode), or none
  // if `segments` is not one of them.
  static std::optional<HttpOp> OpFor(PathSegments segments);

  // `segments`: the path split at '/', without the leading empty one, still
  // percent-encoded. `prefers_text`: the Accept header asks for text/plain
  // (GET /snowflake only). Returns false (and does not respond) if the path
  // is not a snowflake path.
  bool Handle(boost::beast::http::verb method, PathSegments segments, std::string_view query,
              bool prefers_text, const Respond& respond) const;

 private:
  // Answers a snowflake path (OpFor(segments) is not empty).
  void Serve(boost::beast::http::verb method, PathSegments segments, std::string_view query,
             bool prefers_text, const Respond& respond) const;
  // GET /admin/snowflake.
  void ServeAdmin(boost::beast::http::verb method, const Respond& respond) const;
  // Issues `count` IDs and answers: JSON, text lines (`text`) or Leaf's bare ID (`leaf`).
  void Issue(int64_t count, bool text, bool leaf, const Respond& respond) const;

  SnowflakeApi* const generator_;
};

}  // namespace seqd
