// ApiRouter: segment IDs, GET /seq/{key}[?count=N] and Leaf's
// GET /api/segment/get/{key}.
#include <string>

#include "server/core/segment_allocator.h"
#include "server/http/api_call.h"
#include "server/route/key_router.h"
#include "server/service/services.h"

namespace seqd {
namespace {

// The answer to GET /seq or Leaf's endpoint. Keys are validated to a charset
// that needs no JSON escaping, so the hot path formats JSON by hand.
ApiRouter::Response SeqResponse(const ApiRouter::Call& call, const Result<IdBatch>& result) {
  if (!result) {
    const Error& error = result.error();
    if (call.seq_leaf) return call.ErrorText(error);
    return call.ErrorJson(error);
  }
  const IdBatch& ids = *result;
  if (ids.ranges.empty()) {
    return call.ErrorJson(MakeError(ErrorCode::kInternal, "allocator returned no IDs"));
  }
  if (call.seq_leaf) {
    return call.Make(http::status::ok, kTextType, std::to_string(ids.ranges.front().first));
  }
  std::string body;
  if (call.seq_text) {
    for (const IdRange& r : ids.ranges) {
      for (int64_t id = r.first; id <= r.last; ++id) {
        body += std::to_string(id);
        body += '\n';
      }
    }
    return call.Make(http::status::ok, kTextType, std::move(body));
  }
  body.reserve(64 + call.key.size() + 40 * ids.ranges.size());
  body += R"({"key":")";
  body += call.key;
  if (call.seq_batch) {
    body += R"(","count":)";
    body += std::to_string(ids.count());
    body += R"(,"ranges":[)";
    for (size_t i = 0; i < ids.ranges.size(); ++i) {
      if (i > 0) body += ',';
      body += R"({"first":)";
      body += std::to_string(ids.ranges[i].first);
      body += R"(,"last":)";
      body += std::to_string(ids.ranges[i].last);
      body += '}';
    }
    body += "]}";
  } else {
    body += R"(","id":)";
    body += std::to_string(ids.ranges.front().first);
    body += '}';
  }
  return call.Make(http::status::ok, kJsonType, std::move(body));
}

}  // namespace

void ApiRouter::HandleSeq(const std::shared_ptr<Call>& call, std::string key, bool leaf) {
  // Leaf's endpoint answers errors as bare text; ours as JSON.
  auto fail = [call, leaf](const Error& error) -> Response {
    if (leaf) return call->ErrorText(error);
    return call->ErrorJson(error);
  };
  // The key is validated once, by the allocator; its error comes back
  // through the callback like any other.
  int64_t count = 1;
  bool batch = false;
  if (!leaf) {
    Result<std::optional<int64_t>> n = CountParam(call->query, services_.ids.options().max_count);
    if (!n) return call->Reply([&] { return fail(n.error()); });
    if (*n) {
      count = **n;
      batch = true;
    }
  }
  const bool text = leaf || PrefersText(call->req);

  call->key = std::move(key);
  call->seq_batch = batch;
  call->seq_text = text;
  call->seq_leaf = leaf;
  // Captures one pointer so std::function needs no allocation. The token id
  // counts new auto-created keys against its rate.
  services_.router.Take(
      call->key, count, Hop::kMayForward,
      [call](Result<IdBatch> result) {
        call->Reply([&]() -> Response { return SeqResponse(*call, result); });
      },
      call->access ? call->access->token_id() : std::string_view());
}

}  // namespace seqd
