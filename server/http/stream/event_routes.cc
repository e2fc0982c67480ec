#include "server/http/stream/event_routes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/key_text.h"
#include "server/http/api_call.h"
#include "server/http/stream/event_stream.h"
#include "server/http/http_ops.h"
#include "server/http/stream/sse_wire.h"
#include "server/service/message_api.h"
#include "server/service/request_metrics.h"

namespace seqd {

namespace {

constexpr std::string_view kEventStreamType = "text/event-stream";
constexpr int64_t kMaxSeq = std::numeric_limits<int64_t>::max();

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

// Every value of `name` in `query`, percent-decoded; nullopt on a bad escape.
std::optional<std::vector<std::string>> QueryValues(std::string_view query, std::string_view name) {
  std::vector<std::string> out;
  if (query.empty()) return out;
  for (std::string_view part : Split(query, '&')) {
    const size_t eq = part.find('=');
    if (part.substr(0, eq) != name) continue;
    std::optional<std::string> v = PercentDecode(
        eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

// The resume point of the request: Last-Event-ID (if not empty) or ?from=.
// `header`: the value came from Last-Event-ID.
Result<std::optional<std::string>> ResumeText(const ApiRouter::Call& call, bool* header) {
  *header = !call.req.last_event_id.empty();
  if (*header) return std::optional<std::string>(call.req.last_event_id);
  std::optional<std::string_view> raw = call.RawParam("from");
  if (!raw) return std::optional<std::string>();
  std::optional<std::string> text = PercentDecode(*raw, true);
  if (!text) return Invalid("from has a malformed percent-escape");
  return std::optional<std::string>(std::move(*text));
}

// The conversations of the request and where each starts.
Result<std::vector<StreamConv>> StreamConvs(const ApiRouter::Call& call, PathSegments seg,
                                            bool multi) {
  bool header = false;
  Result<std::optional<std::string>> resume = ResumeText(call, &header);
  if (!resume) return resume.error();
  std::vector<StreamConv> convs;
  if (!multi) {
    std::optional<std::string> conv = PercentDecode(seg[1], false);
    if (!conv) return Invalid("conversation id has a malformed percent-escape");
    StreamConv c{std::move(*conv), std::nullopt};
    if (*resume) {
      // Last-Event-ID: the last seq received; ?from=: the first seq wanted.
      std::optional<int64_t> n = ParseBoundedInt(**resume, header ? 0 : 1, kMaxSeq);
      if (!n) {
        return Invalid(header ? "Last-Event-ID must be a seq (an integer >= 0)"
                              : "from must be an integer in [1, " + std::to_string(kMaxSeq) + "]");
      }
      c.last = header ? *n : *n - 1;
    }
    convs.push_back(std::move(c));
    return convs;
  }
  std::optional<std::vector<std::string>> ids = QueryValues(call.query, "conv");
  if (!ids) return Invalid("conv has a malformed percent-escape");
  if (ids->empty()) return Invalid("conv is required (one or more: ?conv=a&conv=b)");
  for (std::string& id : *ids) {
    const bool seen = std::any_of(convs.begin(), convs.end(),
                                  [&](const StreamConv& c) { return c.conv_id == id; });
    if (seen) continue;
    if (convs.size() == kMaxStreamConvs) {
      return Invalid("at most " + std::to_string(kMaxStreamConvs) + " conversations per stream");
    }
    convs.push_back(StreamConv{std::move(id), std::nullopt});
  }
  if (*resume) {
    // The token of the last event received: each listed conversation
    // resumes after its seq; the others start from now.
    Result<ResumePoints> points = ParseResumeToken(**resume, kMaxStreamConvs);
    if (!points) return points.error();
    for (const auto& [conv, seq] : *points) {
      for (StreamConv& c : convs) {
        if (c.conv_id == conv) c.last = seq;
      }
    }
  }
  return convs;
}

}  // namespace

bool EventRoutes::IsEventsPath(std::string_view path) {
  if (path == "/events") return true;
  constexpr std::string_view kPrefix = "/conversations/";
  constexpr std::string_view kSuffix = "/events";
  if (!path.starts_with(kPrefix) || !path.ends_with(kSuffix)) return false;
  if (path.size() <= kPrefix.size() + kSuffix.size()) return false;
  const std::string_view conv =
      path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size());
  return conv.find('/') == std::string_view::npos;
}

void EventRoutes::Handle(const std::shared_ptr<ApiRouter::Call>& call, PathSegments seg) {
  const bool multi = seg.size() == 1;
  auto fail = [&](const Error& e) { call->Finish(call->ErrorJson(e)); };
  Result<std::vector<StreamConv>> convs = StreamConvs(*call, seg, multi);
  if (!convs) return fail(convs.error());
  for (const StreamConv& c : *convs) {
    if (Status s = ValidateKeyText(c.conv_id); !s) {
      return fail(
          Invalid("conversation id " +
                  s.error().message.substr(s.error().message.rfind("key ", 0) == 0 ? 4 : 0)));
    }
  }
  for (const StreamConv& c : *convs) {
    if (!call->Permit(HttpOp::kMsgEvents, c.conv_id)) return;
  }
  std::optional<std::string> user;
  if (std::optional<std::string_view> raw = call->RawParam("user")) {
    user = PercentDecode(*raw, true);
    if (!user) return fail(Invalid("user has a malformed percent-escape"));
    if (Status s = ValidateKeyText(*user); !s) return fail(Invalid("user is not a valid id"));
  }

  StreamCounters* metrics = &services_.metrics.streams();
  EventStreamOptions stream_options = options_.events;
  stream_options.check_max_on_heartbeat = services_.cluster != nullptr;
  Result<std::shared_ptr<EventStream>> stream =
      EventStream::Create(EventStream::Deps{services_.messages, options_.clock, metrics},
                          stream_options, std::move(*convs), multi, std::move(user));
  if (!stream) return fail(stream.error());
  // A tokens reload that takes this token's rights away ends the stream.
  if (const std::optional<Permission>& p = HttpOpFor(HttpOp::kMsgEvents).permission; p) {
    (*stream)->EndWhenRevoked(services_.auth, *call->access, *p);
  }

  const Principal* who = call->access->principal();
  const std::string_view token = who && !who->open ? std::string_view(who->id) : "";
  StreamLimits::Refusal refusal = StreamLimits::Refusal::kNone;
  std::unique_ptr<StreamLimits::Slot> slot =
      limits_->AcquireFor(token, *stream, &EventStream::Close, &refusal);
  if (!slot) {
    const bool per_token = refusal == StreamLimits::Refusal::kPerToken;
    metrics->Refused(per_token);
    return fail(MakeError(
        ErrorCode::kResourceExhausted,
        per_token ? "too many open streams for this token (limit " +
                        std::to_string(limits_->max_per_token()) + ")"
                  : "too many open streams (limit " + std::to_string(limits_->max_total()) + ")"));
  }

  HttpResponse head = call->Make(http::status::ok, kEventStreamType, "");
  head.set("X-Accel-Buffering", "no");
  StampRequestId(head, call->ids.request.view());
  // The connection writes the head and then the sink; the request is
  // counted as answered now.
  if (call->responded.exchange(true)) return;
  std::shared_ptr<HttpResponder> to = std::move(call->responder);
  std::shared_ptr<EventSink> sink = to->StartStream(std::move(head), options_.max_buffer_bytes);
  if (!sink) {
    call->responded = false;
    call->responder = std::move(to);
    return call->Finish(call->ErrorJson(http::status::internal_server_error, "internal",
                                        "this connection cannot stream"));
  }
  if (call->metrics) {
    call->metrics->CountRequest(Interface::kHttp, call->op, "ok",
                                RequestMetrics::Since(call->started));
  }
  (*stream)->Run(std::move(sink), std::move(slot));
}

}  // namespace seqd
