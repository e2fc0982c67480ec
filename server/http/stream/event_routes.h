// The Server-Sent Events routes (docs/http-api.md, "Server-Sent Events"):
//
//   GET /conversations/{conv}/events[?from=N][&user=U]
//       ids are seqs; Last-Event-ID: N resumes after N, ?from=N starts at N
//       (the header wins: a browser reconnects to the same URL with it)
//   GET /events?conv=a&conv=b...[&from=TOKEN][&user=U]
//       at most kMaxStreamConvs conversations; ids are resume tokens
//       (server/http/stream/sse_wire.h) and the data carries conv_id;
//       Last-Event-ID or ?from= take a token and resume after it
// Without either, a stream starts with what is committed from now on.
// Scope msg:read for every conversation (op msg_events). Over the
// streams' limits (server/http/stream/stream_limits.h): 429 resource_exhausted.
//
// Thread safety: Handle() is safe from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "server/http/api_router.h"
#include "server/http/http_util.h"

namespace seqd {

inline constexpr size_t kMaxStreamConvs = 100;

class EventRoutes {
 public:
  // Everything referred to must outlive the routes and every stream.
  EventRoutes(const Services& services, const StreamOptions& options,
              std::shared_ptr<StreamLimits> limits)
      : services_(services), options_(options), limits_(std::move(limits)) {}

  // Answers a GET (or HEAD) of either route; `seg` is the split path.
  void Handle(const std::shared_ptr<ApiRouter::Call>& call, PathSegments seg);

  // True for the two routes' paths (where ?access_token= is accepted).
  static bool IsEventsPath(std::string_view path);

 private:
  const Services& services_;
  const StreamOptions& options_;
  const std::shared_ptr<StreamLimits> limits_;
};

}  // namespace seqd
