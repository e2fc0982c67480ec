// Every message-store route (sends, pulls, members, status, batches) with
// its JSON shape, one function per path family, and the small request and
// answer helpers they share.
#include "server/http/routes/message_routes.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "server/auth/access.h"
#include "server/http/http_ops.h"
#include "server/http/http_request.h"
#include "server/http/http_util.h"
#include "server/http/message_json.h"
#include "server/service/message_api.h"
#include "server/service/services.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace http = boost::beast::http;
using Json = nlohmann::ordered_json;

namespace {

constexpr int64_t kMaxSeq = std::numeric_limits<int64_t>::max();

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The leading messages whose JSON encodings add up to at most `max_bytes`
// (always the first, so a reader makes progress), and how many they are.
std::pair<Json, size_t> CappedMessagesJson(const std::vector<StoredMessage>& messages,
                                           size_t max_bytes) {
  Json list = Json::array();
  size_t bytes = 0;
  for (const StoredMessage& m : messages) {
    Json j = MessageJson(m);
    bytes += Dump(j).size() + 1;  // and its comma
    if (bytes > max_bytes && !list.empty()) break;
    list.push_back(std::move(j));
  }
  const size_t n = list.size();
  return {std::move(list), n};
}

Json MemberJson(const MemberView& v) {
  Json j;
  j["conv_id"] = v.conv_id;
  j["user_id"] = v.user_id;
  j["min_seq"] = v.state.min_seq;
  j["max_seq"] = v.state.max_seq ? Json(*v.state.max_seq) : Json(nullptr);
  j["read_seq"] = v.state.read_seq;
  return j;
}

// One request: answers through `respond`, errors in the API's one format.
class Exchange {
 public:
  explicit Exchange(MessageRoutes::Respond respond) : respond_(std::move(respond)) {}

  void Ok(http::status status, const Json& j, std::string location = {}) const {
    respond_({status, Dump(j), "", std::move(location), {}});
  }
  void Fail(const Error& e) const {
    respond_({HttpStatusFor(e.code), ErrorBody(ErrorCodeName(e.code), PublicMessage(e)), "", "",
              WireErrorFor(e.code).metric_label});
  }
  void NotAllowed(http::verb method, std::string_view allow) const {
    respond_(
        {http::status::method_not_allowed,
         ErrorBody("method_not_allowed", "method " + std::string(http::to_string(method)) +
                                             " is not allowed here; use " + std::string(allow)),
         std::string(allow), "", "method_not_allowed"});
  }
  // The CSRF rule's 415 (RefusedAsCrossSite).
  void CrossSite() const {
    const std::string_view code =
        ProtocolErrorFor(ProtocolError::kUnsupportedMediaType).metric_label;
    respond_(
        {http::status::unsupported_media_type, ErrorBody(code, kCrossSiteRefusal), "", "", code});
  }
  // A callback answering `done` results with `to_json` and `status`.
  template <typename T, typename F>
  MessageCallback<T> Answer(http::status status, F to_json) const {
    return [self = *this, status, to_json](Result<T> r) {
      if (!r) return self.Fail(r.error());
      self.Ok(status, to_json(*r));
    };
  }

 private:
  MessageRoutes::Respond respond_;
};

Result<std::string> DecodeSegment(std::string_view raw, std::string_view what) {
  std::optional<std::string> s = PercentDecode(raw, false);
  if (!s)
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(what) + " has a malformed percent-escape");
  return *s;
}

// A query parameter as an integer in [min, max]; nullopt value if absent.
Result<std::optional<int64_t>> IntParam(std::string_view query, std::string_view name, int64_t min,
                                        int64_t max) {
  std::optional<std::string_view> raw = FindQueryParam(query, name);
  if (!raw) return std::optional<int64_t>();
  std::optional<std::string> text = PercentDecode(*raw, true);
  std::optional<int64_t> v = text ? ParseBoundedInt(*text, min, max) : std::nullopt;
  if (!v) {
    return MakeError(ErrorCode::kInvalidArgument, std::string(name) + " must be an integer in [" +
                                                      std::to_string(min) + ", " +
                                                      std::to_string(max) + "]");
  }
  return std::optional<int64_t>(*v);
}

Result<std::optional<std::string>> StringParam(std::string_view query, std::string_view name) {
  std::optional<std::string_view> raw = FindQueryParam(query, name);
  if (!raw) return std::optional<std::string>();
  std::optional<std::string> text = PercentDecode(*raw, true);
  if (!text) {
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(name) + " has a malformed percent-escape");
  }
  return std::optional<std::string>(std::move(*text));
}

Result<std::vector<std::string>> StringList(const nlohmann::json& body, std::string_view field) {
  auto it = body.find(field);
  if (it == body.end()) return FieldError(field, "is required");
  if (!it->is_array()) return FieldError(field, "must be an array of strings");
  if (it->size() > kMaxListItems) {
    return MakeError(ErrorCode::kTooLarge,
                     "field '" + std::string(field) + "' has " + std::to_string(it->size()) +
                         " items; the limit is " + std::to_string(kMaxListItems));
  }
  std::vector<std::string> out;
  for (const nlohmann::json& v : *it) {
    if (!v.is_string()) return FieldError(field, "must be an array of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// The path of message `seq` of `conv`, the id percent-encoded.
std::string MessagePath(std::string_view conv, int64_t seq) {
  return "/conversations/" + PercentEncode(conv) + "/messages/" + std::to_string(seq);
}

void Send(MessageApi& service, const std::string& conv, const std::string& body,
          const Exchange& ex) {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return ex.Fail(j.error());
  SendRequest req;
  req.conv_id = conv;
  for (auto [field, out] :
       {std::pair{"sender_id", &req.sender_id}, std::pair{"client_msg_id", &req.client_msg_id},
        std::pair{"payload", &req.payload}}) {
    auto it = j->find(field);
    if (it == j->end()) return ex.Fail(FieldError(field, "is required"));
    if (!it->is_string()) return ex.Fail(FieldError(field, "must be a string"));
    *out = it->get<std::string>();
  }
  if (auto it = j->find("content_type"); it != j->end() && !it->is_null()) {
    std::optional<int64_t> v = IntField(*it);
    if (!v || *v < std::numeric_limits<int32_t>::min() ||
        *v > std::numeric_limits<int32_t>::max()) {
      return ex.Fail(FieldError("content_type", "must be a 32-bit integer"));
    }
    req.content_type = static_cast<int32_t>(*v);
  }
  service.Send(std::move(req), Hop::kMayForward, [ex, conv](Result<AppendOutcome> r) {
    if (!r) return ex.Fail(r.error());
    Json out;
    out["seq"] = r->seq;
    out["server_msg_id"] = r->server_msg_id;
    out["send_time"] = r->send_time_ms;
    out["duplicate"] = r->duplicate;
    if (r->duplicate) return ex.Ok(http::status::ok, out);
    ex.Ok(http::status::created, out, MessagePath(conv, r->seq));
  });
}

void Pull(MessageApi& service, const std::optional<LongPollDeps>& long_poll, const Access& access,
          const std::string& conv, std::string_view query, const Exchange& ex) {
  Result<std::optional<std::string>> user = StringParam(query, "user");
  if (!user) return ex.Fail(user.error());
  Result<std::optional<int64_t>> wait_ms = IntParam(query, "wait_ms", 0, kMaxLongPollWaitMs);
  if (!wait_ms) return ex.Fail(wait_ms.error());
  const int64_t wait = wait_ms->value_or(0);
  if (Result<std::optional<std::string>> seqs = StringParam(query, "seqs"); !seqs) {
    return ex.Fail(seqs.error());
  } else if (*seqs) {
    if (wait > 0) {
      return ex.Fail(MakeError(ErrorCode::kInvalidArgument,
                               "wait_ms applies to range pulls (from=), not to seqs="));
    }
    std::vector<int64_t> list;
    for (std::string_view part : Split(**seqs, ',')) {
      std::optional<int64_t> v = ParseBoundedInt(part, 1, kMaxSeq);
      if (!v) {
        return ex.Fail(MakeError(ErrorCode::kInvalidArgument,
                                 "seqs must be a comma-separated list of seqs >= 1"));
      }
      list.push_back(*v);
    }
    const size_t max_bytes = service.max_pull_bytes();
    return service.PullSeqs(conv, std::move(list), *user,
                            ex.Answer<std::vector<StoredMessage>>(
                                http::status::ok, [max_bytes](const std::vector<StoredMessage>& m) {
                                  auto [messages, n] = CappedMessagesJson(m, max_bytes);
                                  Json out;
                                  out["messages"] = std::move(messages);
                                  out["is_end"] = n == m.size();
                                  // The rest: ask again for the seqs from here.
                                  if (n < m.size()) out["next_from"] = m[n].seq;
                                  return out;
                                }));
  }
  PullRequest req;
  req.conv_id = conv;
  req.user_id = *user;
  Result<std::optional<int64_t>> from = IntParam(query, "from", 1, kMaxSeq);
  if (!from) return ex.Fail(from.error());
  Result<std::optional<int64_t>> to = IntParam(query, "to", 1, kMaxSeq);
  if (!to) return ex.Fail(to.error());
  Result<std::optional<int64_t>> limit =
      IntParam(query, "limit", 1, static_cast<int64_t>(kMaxPullLimit));
  if (!limit) return ex.Fail(limit.error());
  Result<std::optional<std::string>> order = StringParam(query, "order");
  if (!order) return ex.Fail(order.error());
  if (*order && **order != "asc" && **order != "desc") {
    return ex.Fail(MakeError(ErrorCode::kInvalidArgument, "order must be asc or desc"));
  }
  req.from_seq = from->value_or(1);
  req.to_seq = *to;
  if (*limit) req.limit = static_cast<size_t>(**limit);
  req.descending = *order && **order == "desc";
  if (wait > 0 && req.descending) {
    return ex.Fail(
        MakeError(ErrorCode::kInvalidArgument, "wait_ms applies to pulls in ascending order only"));
  }
  const size_t max_bytes = service.max_pull_bytes();
  const bool descending = req.descending;
  auto answer =
      ex.Answer<MessagePage>(http::status::ok, [max_bytes, descending](const MessagePage& p) {
        auto [messages, n] = CappedMessagesJson(p.messages, max_bytes);
        Json out;
        out["messages"] = std::move(messages);
        out["is_end"] = !p.more && n == p.messages.size();
        // Not the end: where the next page starts (the range's other
        // bound unchanged).
        if (!out["is_end"].get<bool>() && n > 0) {
          const int64_t last = p.messages[n - 1].seq;
          if (descending) {
            out["next_to"] = last - 1;
          } else {
            out["next_from"] = last + 1;
          }
        }
        return out;
      });
  if (wait > 0 && long_poll) {
    const Principal* who = access.principal();
    const std::string_view token = who && !who->open ? std::string_view(who->id) : "";
    return LongPull(*long_poll, std::move(req), std::chrono::milliseconds(wait), token,
                    std::move(answer));
  }
  service.Pull(std::move(req), std::move(answer));
}

void SetMember(MessageApi& service, const std::string& conv, const std::string& user,
               const std::string& body, const Access& access, const Exchange& ex) {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return ex.Fail(j.error());
  std::optional<int64_t> min_seq, max_seq;
  bool clear_max = false;
  if (auto it = j->find("min_seq"); it != j->end()) {
    min_seq = IntField(*it);
    if (!min_seq) return ex.Fail(FieldError("min_seq", "must be an integer"));
  }
  if (auto it = j->find("max_seq"); it != j->end()) {
    if (it->is_null()) {
      clear_max = true;
    } else {
      max_seq = IntField(*it);
      if (!max_seq) return ex.Fail(FieldError("max_seq", "must be an integer or null"));
    }
  }
  std::string change = "user " + user;
  if (min_seq) change += " min_seq " + std::to_string(*min_seq);
  if (max_seq) change += " max_seq " + std::to_string(*max_seq);
  if (clear_max) change += " max_seq none";
  service.SetMember(
      conv, user, min_seq, max_seq, clear_max,
      access.Audited<MemberView>("msg_member_bounds", conv, std::move(change),
                                 ex.Answer<MemberView>(http::status::ok, MemberJson)));
}

Result<int64_t> RequiredInt(const std::string& body, std::string_view field) {
  Result<nlohmann::json> j = ParseObject(body);
  if (!j) return j.error();
  auto it = j->find(field);
  if (it == j->end()) return FieldError(field, "is required");
  std::optional<int64_t> v = IntField(*it);
  if (!v) return FieldError(field, "must be an integer");
  return *v;
}

}  // namespace

// One request to a message-store path, as the path functions below see it.
struct MessageRoutes::Request {
  http::verb method;
  PathSegments seg;
  std::string_view query;
  const std::string& body;
  bool cross_site;
  const Access& access;
  Exchange ex;

  // True if the token may do `op` (its permission, server/http/http_ops.h)
  // on `conv`; else answered.
  bool Permit(HttpOp op, std::string_view conv) const {
    const HttpOpRow& row = HttpOpFor(op);
    if (!row.permission) return true;
    Status s = access.Check(*row.permission, conv, row.metric_label);
    if (!s) ex.Fail(s.error());
    return s.ok();
  }
  bool PermitAll(HttpOp op, const std::vector<std::string>& convs) const {
    for (const std::string& c : convs) {
      if (!Permit(op, c)) return false;
    }
    return true;
  }
  // True if the request may change state: the method and the CSRF rule
  // (RefusedAsCrossSite); else answered.
  bool Accepts(http::verb wanted, std::string_view allow) const {
    if (method != wanted) return ex.NotAllowed(method, allow), false;
    if (cross_site) return ex.CrossSite(), false;
    return true;
  }
};

bool MessageRoutes::Handle(http::verb method, PathSegments seg, std::string_view query,
                           const std::string& body, bool cross_site, const Access& access,
                           const Respond& respond) {
  const Request r{method, seg, query, body, cross_site, access, Exchange(respond)};
  if (seg.size() == 3 && seg[0] == "users" && seg[2] == "sync") return HandleSync(r), true;
  if (seg.empty() || seg[0] != "conversations" || seg.size() < 2) return false;
  if (seg.size() == 2) {
    if (seg[1] != "max_seqs") return false;
    return HandleMaxSeqs(r), true;
  }
  Result<std::string> conv = DecodeSegment(seg[1], "conversation id");
  if (!conv) return r.ex.Fail(conv.error()), true;
  const std::string_view what = seg[2];
  if (what == "messages") return HandleMessages(r, *conv);
  if (what == "min_seq" && seg.size() == 3) return HandleMinSeq(r, *conv), true;
  if (what == "members" && (seg.size() == 4 || seg.size() == 5)) return HandleMember(r, *conv);
  return false;
}

void MessageRoutes::HandleSync(const Request& r) {
  if (!r.Accepts(http::verb::post, "POST")) return;
  Result<std::string> user = DecodeSegment(r.seg[1], "user id");
  if (!user) return r.ex.Fail(user.error());
  Result<nlohmann::json> j = ParseObject(r.body);
  if (!j) return r.ex.Fail(j.error());
  Result<std::vector<std::string>> convs = StringList(*j, "conv_ids");
  if (!convs) return r.ex.Fail(convs.error());
  if (!r.PermitAll(HttpOp::kMsgSyncUser, *convs)) return;
  service_.SyncUser(
      *user, std::move(*convs),
      r.ex.Answer<std::vector<ConvSync>>(http::status::ok, [](const std::vector<ConvSync>& list) {
        Json arr = Json::array();
        for (const ConvSync& c : list) {
          Json e;
          e["conv_id"] = c.conv_id;
          e["max_seq"] = c.max_seq;
          e["min_seq"] = c.min_seq;
          e["read_seq"] = c.read_seq;
          e["unread"] = c.unread;
          e["member"] = c.member;
          arr.push_back(std::move(e));
        }
        Json out;
        out["conversations"] = std::move(arr);
        return out;
      }));
}

void MessageRoutes::HandleMaxSeqs(const Request& r) {
  if (!r.Accepts(http::verb::post, "POST")) return;
  Result<nlohmann::json> j = ParseObject(r.body);
  if (!j) return r.ex.Fail(j.error());
  Result<std::vector<std::string>> convs = StringList(*j, "conv_ids");
  if (!convs) return r.ex.Fail(convs.error());
  if (!r.PermitAll(HttpOp::kMsgMaxSeqs, *convs)) return;
  std::vector<std::string> ids = *convs;
  service_.MaxSeqs(std::move(*convs),
                   r.ex.Answer<std::vector<int64_t>>(
                       http::status::ok, [ids = std::move(ids)](const std::vector<int64_t>& m) {
                         Json map = Json::object();
                         for (size_t i = 0; i < ids.size() && i < m.size(); ++i) {
                           map[ids[i]] = m[i];
                         }
                         Json out;
                         out["max_seqs"] = std::move(map);
                         return out;
                       }));
}

bool MessageRoutes::HandleMessages(const Request& r, const std::string& conv) {
  const Exchange& ex = r.ex;
  if (r.seg.size() == 3) {
    if (r.method == http::verb::post) {
      if (r.cross_site) return ex.CrossSite(), true;
      if (r.Permit(HttpOp::kMsgSend, conv)) Send(service_, conv, r.body, ex);
      return true;
    }
    if (r.method == http::verb::get) {
      if (r.Permit(HttpOp::kMsgPull, conv)) {
        Pull(service_, long_poll_, r.access, conv, r.query, ex);
      }
      return true;
    }
    return ex.NotAllowed(r.method, "GET, POST"), true;
  }
  std::optional<int64_t> seq = ParseBoundedInt(r.seg[3], 1, kMaxSeq);
  if (!seq) {
    return ex.Fail(MakeError(ErrorCode::kInvalidArgument, "seq must be an integer >= 1")), true;
  }
  if (r.seg.size() == 4) return HandleOneMessage(r, conv, *seq), true;
  if (r.seg.size() == 5 && r.seg[4] == "recall") {
    if (!r.Accepts(http::verb::post, "POST") || !r.Permit(HttpOp::kMsgRecall, conv)) return true;
    SetStatus(r, conv, *seq, MessageStatus::kRecalled, "msg_recall");
    return true;
  }
  return false;
}

void MessageRoutes::HandleOneMessage(const Request& r, const std::string& conv, int64_t seq) {
  const Exchange& ex = r.ex;
  if (r.method == http::verb::delete_) {
    if (!r.Permit(HttpOp::kMsgDelete, conv)) return;
    return SetStatus(r, conv, seq, MessageStatus::kDeleted, "msg_delete");
  }
  if (r.method != http::verb::get) return ex.NotAllowed(r.method, "GET, DELETE");
  if (!r.Permit(HttpOp::kMsgPull, conv)) return;
  service_.PullSeqs(conv, {seq}, std::nullopt, [ex, seq](Result<std::vector<StoredMessage>> got) {
    if (!got) return ex.Fail(got.error());
    if (got->empty()) {
      return ex.Fail(MakeError(ErrorCode::kNotFound, "no message with seq " + std::to_string(seq)));
    }
    ex.Ok(http::status::ok, MessageJson(got->front()));
  });
}

void MessageRoutes::SetStatus(const Request& r, const std::string& conv, int64_t seq,
                              MessageStatus status, std::string_view audit_action) {
  auto message_json = [](const StoredMessage& m) { return MessageJson(m); };
  service_.SetStatus(
      conv, seq, status,
      r.access.Audited<StoredMessage>(audit_action, conv, "seq " + std::to_string(seq),
                                      r.ex.Answer<StoredMessage>(http::status::ok, message_json)));
}

void MessageRoutes::HandleMinSeq(const Request& r, const std::string& conv) {
  if (!r.Accepts(http::verb::put, "PUT") || !r.Permit(HttpOp::kMsgMinSeq, conv)) return;
  Result<int64_t> min_seq = RequiredInt(r.body, "min_seq");
  if (!min_seq) return r.ex.Fail(min_seq.error());
  service_.SetConvMinSeq(
      conv, *min_seq,
      r.access.Audited<int64_t>("msg_min_seq", conv, "min_seq " + std::to_string(*min_seq),
                                r.ex.Answer<int64_t>(http::status::ok, [conv](int64_t v) {
                                  Json out;
                                  out["conv_id"] = conv;
                                  out["min_seq"] = v;
                                  return out;
                                })));
}

bool MessageRoutes::HandleMember(const Request& r, const std::string& conv) {
  const Exchange& ex = r.ex;
  Result<std::string> user = DecodeSegment(r.seg[3], "user id");
  if (!user) return ex.Fail(user.error()), true;
  if (r.seg.size() == 5) {
    if (r.seg[4] != "read_seq") return false;
    if (!r.Accepts(http::verb::put, "PUT") || !r.Permit(HttpOp::kMsgMarkRead, conv)) return true;
    Result<int64_t> read_seq = RequiredInt(r.body, "read_seq");
    if (!read_seq) return ex.Fail(read_seq.error()), true;
    service_.MarkRead(conv, *user, *read_seq, ex.Answer<MemberView>(http::status::ok, MemberJson));
    return true;
  }
  if (r.method == http::verb::get) {
    if (!r.Permit(HttpOp::kMsgGetMember, conv)) return true;
    service_.GetMember(conv, *user, ex.Answer<MemberView>(http::status::ok, MemberJson));
    return true;
  }
  if (r.method == http::verb::put) {
    if (r.cross_site) return ex.CrossSite(), true;
    if (r.Permit(HttpOp::kMsgSetMember, conv))
      SetMember(service_, conv, *user, r.body, r.access, ex);
    return true;
  }
  return ex.NotAllowed(r.method, "GET, PUT"), true;
}

std::optional<HttpOp> MessageRoutes::OpFor(http::verb method, PathSegments seg) {
  if (seg.empty()) return std::nullopt;
  if (seg[0] == "users") return HttpOp::kMsgSyncUser;
  if (seg[0] != "conversations") return std::nullopt;
  if (seg.size() == 2) return HttpOp::kMsgMaxSeqs;  // /conversations/max_seqs
  if (seg.size() >= 3 && seg[2] == "members") {
    if (seg.size() >= 5) return HttpOp::kMsgMarkRead;
    return method == http::verb::get ? HttpOp::kMsgGetMember : HttpOp::kMsgSetMember;
  }
  if (seg.size() >= 3 && seg[2] == "min_seq") return HttpOp::kMsgMinSeq;
  if (seg.size() >= 3 && seg[2] == "messages") {
    if (seg.size() == 3) return method == http::verb::post ? HttpOp::kMsgSend : HttpOp::kMsgPull;
    if (seg.size() == 4 && method == http::verb::get) return HttpOp::kMsgPull;
    return seg.size() == 4 ? HttpOp::kMsgDelete : HttpOp::kMsgRecall;
  }
  return std::nullopt;
}

}  // namespace seqd
