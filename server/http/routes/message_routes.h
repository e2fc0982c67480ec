// HTTP/JSON endpoints of the message store (see docs/message-store.md):
//
//   POST /conversations/{conv}/messages              send
//   GET  /conversations/{conv}/messages?from=&to=&limit=&order=&user=&wait_ms=
//        (wait_ms: a long-poll, server/http/stream/long_poll.h)
//   GET  /conversations/{conv}/messages?seqs=1,2,3&user=
//   GET  /conversations/{conv}/messages/{seq}
//   DELETE /conversations/{conv}/messages/{seq}      delete (tombstone)
//   POST /conversations/{conv}/messages/{seq}/recall recall (tombstone)
//   PUT  /conversations/{conv}/min_seq               {"min_seq":N}
//   GET|PUT /conversations/{conv}/members/{user}     bounds
//   PUT  /conversations/{conv}/members/{user}/read_seq  {"read_seq":N}
//   POST /conversations/max_seqs                     {"conv_ids":[...]}
//   POST /users/{user}/sync                          {"conv_ids":[...]}
//
// Pull answers carry at most about MessageServiceOptions::max_pull_bytes of
// messages (at least one); a cut answer has is_end false and next_from
// (next_to when newest first) to continue.
//
// Thread safety: Handle() is safe from any thread; `respond` runs exactly
// once, on the calling thread or on a message-store thread.
#pragma once

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/http_ops.h"
#include "server/http/http_util.h"
#include "server/http/stream/long_poll.h"

namespace seqd {

class Access;

class MessageApi;

class MessageRoutes {
 public:
  // One answer. `allow`: non-empty only for 405 answers (the Allow
  // header); `location`: only for 201 (the Location header, the created
  // message's path); `code`: the error body's code (the metric status),
  // empty for success.
  struct Reply {
    boost::beast::http::status status;
    std::string json;
    std::string allow;
    std::string location;
    std::string_view code;
  };
  using Respond = std::function<void(Reply reply)>;

  // `service` must outlive the routes and every pending call. `long_poll`: what
  // waiting pulls use; without it (or without its clock) wait_ms answers
  // at once.
  explicit MessageRoutes(MessageApi& service, std::optional<LongPollDeps> long_poll = std::nullopt)
      : service_(service), long_poll_(std::move(long_poll)) {}

  // `segments`: the path split at '/', without the leading empty one, still
  // percent-encoded. Returns false (and does not respond) if the path is
  // not a message-store path.
  // `access`: the request's token; each path checks its scope (msg:send,
  // msg:read, msg:admin on the conversation; every listed one for the batch
  // calls) and answers 401/403 without calling the service. Mutations of
  // msg:admin paths are audited. `cross_site`: RefusedAsCrossSite() of the
  // request; a route that takes the method then answers 415 (after 404 and
  // 405, before anything else).
  bool Handle(boost::beast::http::verb method, PathSegments segments, std::string_view query,
              const std::string& body, bool cross_site, const Access& access,
              const Respond& respond);

  // The op (server/http/http_ops.h) of a message-store path, or none if it
  // is not one.
  static std::optional<HttpOp> OpFor(boost::beast::http::verb method, PathSegments segments);

 private:
  // One path family each (message_routes.cc): each answers through the
  // request's exchange; those returning bool return false for a path that
  // is not the family's after all (the router then answers 404).
  struct Request;
  void HandleSync(const Request& r);
  void HandleMaxSeqs(const Request& r);
  bool HandleMessages(const Request& r, const std::string& conv);
  void HandleOneMessage(const Request& r, const std::string& conv, int64_t seq);
  void SetStatus(const Request& r, const std::string& conv, int64_t seq, MessageStatus status,
                 std::string_view audit_action);
  void HandleMinSeq(const Request& r, const std::string& conv);
  bool HandleMember(const Request& r, const std::string& conv);

  MessageApi& service_;
  const std::optional<LongPollDeps> long_poll_;
};

}  // namespace seqd
