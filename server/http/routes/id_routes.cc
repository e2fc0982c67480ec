// ApiRouter: segment and dense IDs, GET /seq/{key}[?count=N][&contiguous=
// true][&token=T] and Leaf's GET /api/segment/get/{key}.
#include <charconv>
#include <string>

#include "server/http/api_call.h"
#include "server/service/id_api.h"
#include "server/service/services.h"

namespace seqd {
namespace {

void AppendInt(std::string& out, int64_t v) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, end);
}

// `key` as the content of a JSON string. Keys are well-formed UTF-8 with no
// control character (ValidateKeyText), so only '"' and '\' need an
// escape.
void AppendJsonKey(std::string& out, std::string_view key) {
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
}

// Answers GET /seq or Leaf's endpoint. The body is formatted by hand, into
// a buffer the thread keeps (FinishOk copies it before it returns).
void AnswerSeq(ApiRouter::Call& call, const Result<IdBatch>& result) {
  if (!result) {
    const Error& error = result.error();
    return call.Finish(call.seq_leaf ? call.ErrorText(error) : call.ErrorJson(error));
  }
  const IdBatch& ids = *result;
  if (ids.ranges.empty()) {
    return call.Finish(
        call.ErrorJson(MakeError(ErrorCode::kInternal, "allocator returned no IDs")));
  }
  thread_local std::string body;
  body.clear();
  if (call.seq_leaf) {
    AppendInt(body, ids.ranges.front().first);
    return call.FinishOk(kTextType, body);
  }
  if (call.seq_block) {  // one range (a contiguous take), whatever Accept says
    body += R"({"key":")";
    AppendJsonKey(body, call.key);
    body += R"(","first":)";
    AppendInt(body, ids.ranges.front().first);
    body += R"(,"last":)";
    AppendInt(body, ids.ranges.back().last);
    body += '}';
    return call.FinishOk(kJsonType, body);
  }
  if (call.seq_text) {
    for (const IdRange& r : ids.ranges) {
      for (int64_t id = r.first; id <= r.last; ++id) {
        AppendInt(body, id);
        body += '\n';
      }
    }
  } else {
    body += R"({"key":")";
    AppendJsonKey(body, call.key);
    if (call.seq_batch) {
      body += R"(","count":)";
      AppendInt(body, ids.count());
      body += R"(,"ranges":[)";
      for (size_t i = 0; i < ids.ranges.size(); ++i) {
        if (i > 0) body += ',';
        body += R"({"first":)";
        AppendInt(body, ids.ranges[i].first);
        body += R"(,"last":)";
        AppendInt(body, ids.ranges[i].last);
        body += '}';
      }
      body += "]}";
    } else {
      body += R"(","id":)";
      AppendInt(body, ids.ranges.front().first);
      body += '}';
    }
  }
  call.FinishOk(call.seq_text ? kTextType : kJsonType, body);
  // A large answer does not keep its room in the thread.
  if (body.capacity() > 64 * 1024) std::string().swap(body);
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
    Result<std::optional<int64_t>> n = CountParam(call->query, services_.ids.max_count());
    if (!n) return call->Reply([&] { return fail(n.error()); });
    if (*n) {
      count = **n;
      batch = true;
    }
  }
  bool block = false;
  if (!leaf) {
    if (std::optional<std::string_view> c = call->RawParam("contiguous")) {
      if (*c != "true" && *c != "false") {
        return call->Reply([&] {
          return fail(MakeError(ErrorCode::kInvalidArgument, "contiguous must be true or false"));
        });
      }
      block = *c == "true";
    }
  }
  // An idempotent request of a dense key (DenseAllocator::Take); the
  // router checks it.
  std::string token;
  if (std::optional<std::string_view> t = leaf ? std::nullopt : call->RawParam("token")) {
    std::optional<std::string> decoded = PercentDecode(*t, true);
    if (!decoded) {
      return call->Reply([&] {
        return fail(MakeError(ErrorCode::kInvalidArgument, "token has a malformed percent-escape"));
      });
    }
    token = std::move(*decoded);
  }
  const bool text = leaf || PrefersText(call->req);

  call->key = std::move(key);
  call->seq_batch = batch;
  call->seq_text = text;
  call->seq_leaf = leaf;
  call->seq_block = block;
  // The callback captures a plain pointer, which std::function keeps
  // without allocating; the call holds itself until the callback runs
  // (Take runs it exactly once). Should Take throw, the call stays held: a
  // leak at worst, never a dangling callback. The token id counts new
  // auto-created keys against its rate.
  call->self = call;
  auto answer = [c = call.get()](Result<IdBatch> result) {
    const std::shared_ptr<Call> hold = std::move(c->self);
    try {
      AnswerSeq(*c, result);
    } catch (const std::exception& e) {
      SEQD_LOG(kError).With(c->ids)
          << "building response for " << c->path << " failed: " << e.what();
      c->Finish(c->ErrorJson(http::status::internal_server_error, "internal", "internal error"));
    }
  };
  const std::string_view who = call->access ? call->access->token_id() : std::string_view();
  services_.ids.Take(
      {.key = call->key, .count = count, .contiguous = block, .requester = who, .token = token},
      answer);
}

}  // namespace seqd
