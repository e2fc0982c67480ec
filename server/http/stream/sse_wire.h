// The bytes of Server-Sent Events (WHATWG HTML, "Server-sent events") as
// seqd's event routes send them (docs/http-api.md), and the resume token
// of multi-conversation streams.
//
//   retry: <ms>\n\n                        first, once
//   id: <id>\nevent: message\ndata: <json>\n\n   one per message
//   : hb\n\n                               heartbeat comment
//   event: dropped\ndata: {"reason":"slow_reader","last_event_id":"<id>"}\n\n
//                                           last, before a slow reader's close
//
// Resume token (the `id:` of GET /events): every conversation of the stream
// with the last seq delivered, "a=12,b=7", in the order the stream lists
// them; a conversation id's bytes other than A-Z a-z 0-9 _ - . : @ are
// percent-encoded (PercentEncode: ',' and '=' never appear unescaped).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace seqd {

inline constexpr std::string_view kSseHeartbeat = ": hb\n\n";

// "retry: <ms>\n\n".
std::string SseRetry(int64_t ms);

// Appends one message event. REQUIRES: `id` and `json` hold no CR or LF.
void AppendSseMessage(std::string_view id, std::string_view json, std::string& out);

// The last event of a stream the server ended: `last_event_id` is the id
// of the last message event queued before it ("" if none); `reason` says
// why: "slow_reader", or "unauthenticated" / "permission_denied" when a
// tokens reload took the stream's rights away.
std::string SseDropped(std::string_view last_event_id, std::string_view reason = "slow_reader");

using ResumePoints = std::vector<std::pair<std::string, int64_t>>;  // conv, last seq

// "a=12,b=7".
std::string EncodeResumeToken(const ResumePoints& points);

// The pairs of a token, in its order; kInvalidArgument if it is not one
// (an empty part, no '=', a bad escape, a seq not a decimal in
// [0, 2^63-1]), or lists more than `max_convs`.
Result<ResumePoints> ParseResumeToken(std::string_view token, size_t max_convs);

}  // namespace seqd
