// Where ApiRouter sends the answer to one request: HttpServer's connection,
// or (tests, the fuzzer) a function. The router calls exactly one of
// Respond() and RespondOk() once per request.
//
// Thread safety: the router may call from any thread (the request's, or an
// allocator, database or timer thread); implementations must not block.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace seqd {

class EventSink;

using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Store groups (docs/cluster.md, "Store groups"): the field every answer
// carries, the placement version the instance read last.
inline constexpr std::string_view kPlacementVersionField = "Seqd-Placement-Version";

// Sets `res`'s Seqd-Placement-Version field to `version`.
void StampPlacementVersion(HttpResponse& res, int64_t version);

// A 200 answer with Cache-Control: no-store, X-Request-Id (and, with store
// groups, Seqd-Placement-Version) and nothing else to say: what the ID
// routes send. Its views are valid only during the call.
struct OkAnswer {
  unsigned version = 11;  // the request's
  bool keep_alive = true;
  std::string_view content_type;
  std::string_view body;
  std::string_view request_id;     // "": no X-Request-Id field
  int64_t placement_version = -1;  // < 0: no Seqd-Placement-Version field
};

class HttpResponder {
 public:
  virtual ~HttpResponder() = default;

  // Any answer, complete (Content-Length set).
  virtual void Respond(HttpResponse res) = 0;

  // `answer` as the HttpResponse ToResponse() makes of it. The default
  // calls Respond(ToResponse(answer)); a connection may format the same
  // bytes without building the message.
  virtual void RespondOk(const OkAnswer& answer);

  // A streamed answer instead of Respond(): `head` (its body ignored; no
  // Content-Length: the body ends when the connection closes), then
  // whatever is written to the returned sink, whose queue holds at most
  // `max_bytes` (server/http/stream/event_sink.h). The connection closes when the
  // sink is closed and drained, when the client goes away, or at server
  // shutdown. nullptr if this responder cannot stream (the default); the
  // caller then answers with Respond().
  virtual std::shared_ptr<EventSink> StartStream(HttpResponse head, size_t max_bytes);

  // Content-Type, Cache-Control: no-store, X-Request-Id,
  // Seqd-Placement-Version, the Connection field message::keep_alive()
  // sets for the version, Content-Length; the body.
  static HttpResponse ToResponse(const OkAnswer& answer);
};

// A responder that hands the answer to a function; with `stream`, a
// streamed answer's head and sink go to it (tests drain the sink by hand).
std::shared_ptr<HttpResponder> RespondTo(
    std::function<void(HttpResponse)> fn,
    std::function<void(HttpResponse, std::shared_ptr<EventSink>)> stream = nullptr);

}  // namespace seqd
