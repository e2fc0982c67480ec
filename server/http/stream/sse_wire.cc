#include "server/http/stream/sse_wire.h"

#include <limits>

#include "server/http/http_util.h"

namespace seqd {

std::string SseRetry(int64_t ms) { return "retry: " + std::to_string(ms) + "\n\n"; }

void AppendSseMessage(std::string_view id, std::string_view json, std::string& out) {
  out.append("id: ");
  out.append(id);
  out.append("\nevent: message\ndata: ");
  out.append(json);
  out.append("\n\n");
}

std::string SseDropped(std::string_view last_event_id, std::string_view reason) {
  std::string out = R"(event: dropped
data: {"reason":")";
  out.append(reason);  // one of a few fixed words
  out.append(R"(","last_event_id":")");
  // Ids are digits, '=', ',' and escaped conversation ids: nothing to
  // escape in JSON.
  out.append(last_event_id);
  out.append("\"}\n\n");
  return out;
}

std::string EncodeResumeToken(const ResumePoints& points) {
  std::string out;
  for (const auto& [conv, seq] : points) {
    if (!out.empty()) out += ',';
    out += PercentEncode(conv);
    out += '=';
    out += std::to_string(seq);
  }
  return out;
}

Result<ResumePoints> ParseResumeToken(std::string_view token, size_t max_convs) {
  auto bad = [] {
    return MakeError(ErrorCode::kInvalidArgument,
                     "the resume token must be conv=seq pairs separated by commas");
  };
  ResumePoints out;
  if (token.empty()) return bad();
  for (std::string_view part : Split(token, ',')) {
    const size_t eq = part.find('=');
    if (eq == 0 || eq == std::string_view::npos) return bad();
    std::optional<std::string> conv = PercentDecode(part.substr(0, eq), false);
    std::optional<int64_t> seq =
        ParseBoundedInt(part.substr(eq + 1), 0, std::numeric_limits<int64_t>::max());
    if (!conv || conv->empty() || !seq) return bad();
    if (out.size() == max_convs) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          "the resume token lists more than " + std::to_string(max_convs) + " conversations");
    }
    out.emplace_back(std::move(*conv), *seq);
  }
  return out;
}

}  // namespace seqd
