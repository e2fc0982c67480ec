// What a RESP connection does with a parsed command (resp_session.h): the
// decision comes from DecideRespCommand (resp_commands.h); this file acts on
// it: AUTH and the access checks, INCR runs and INCRBY takes at the router,
// their replies in order, and the metrics.
#include <boost/asio/post.hpp>
#include <utility>

#include "proto/resp_codec.h"
#include "server/base/log.h"
#include "server/resp/resp_session.h"
#include "server/service/id_api.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace net = boost::asio;

namespace {

// Failed AUTHs after which a connection is closed.
constexpr int kMaxFailedAuths = 3;

constexpr std::optional<ErrorCode> kOk = std::nullopt;

}  // namespace

void RespSession::Execute() {
  // The hot command, `INCR key`, decided here without building a RespAction:
  // DecideRespCommand decides the same (a last argument "HTTP/..." is a
  // cross-protocol request, left to it). resp_commands_test holds them equal.
  if (IsPlainIncr(args_)) {
    if (Allowed(RespOp::kIncr, args_[1])) Incr(args_[1]);
    return;
  }
  RespAction a = DecideRespCommand(args_, max_count_);
  if (a.ends_run) CloseRun();  // everything else is ordered after the INCRs before it
  if (a.looks_like_http) {
    Counted(a.op, a.code);
    SEQD_LOG(kWarn) << "resp: closing a connection from " << access_.peer()
                    << " that sent an HTTP request (cross-protocol attack or wrong port)";
    read_closed_ = true;
    return Close();
  }
  if (a.kind == RespAction::Kind::kAuth) return Auth(a);
  if (a.needs_auth && !Authenticated(a.op)) return;
  switch (a.kind) {
    case RespAction::Kind::kAuth:
      return;  // handled above
    case RespAction::Kind::kIncr:
    case RespAction::Kind::kIncrBy:
      if (!Permitted(a.op, a.key)) return;
      if (a.kind == RespAction::Kind::kIncr) return Incr(a.key);
      return IncrBy(a.key, a.count);
    case RespAction::Kind::kQuery:
      for (std::string_view key : a.keys) {
        if (Status s = access_.Check(Permission::kIds, key, RespOpName(a.op)); !s) {
          return Reply(a.op, ErrorCode::kPermissionDenied, NoPermReply(s.error().message));
        }
      }
      return Query(a);
    case RespAction::Kind::kReply:
      Reply(a.op, a.code, a.reply);
      if (a.close) read_closed_ = true;
      return;
  }
}

bool RespSession::Authenticated(RespOp op) {
  access_.Revalidate(server_->auth);  // a reload may have revoked the token
  if (access_.principal()) return true;
  access_.AuditUnauthenticated(RespOpName(op));
  CloseRun();
  Reply(op, ErrorCode::kUnauthenticated, kNoAuthReply);
  return false;
}

// The op's permission (RespOpFor) for the key; every INCR/INCRBY row has one.
bool RespSession::Permitted(RespOp op, std::string_view key) {
  Status s =
      access_.Check(RespOpFor(op).permission.value_or(Permission::kIds), key, RespOpName(op));
  if (s) return true;
  CloseRun();
  Reply(op, ErrorCode::kPermissionDenied, NoPermReply(s.error().message));
  return false;
}

bool RespSession::Allowed(RespOp op, std::string_view key) {
  return Authenticated(op) && Permitted(op, key);
}

void RespSession::RejectProtocolError(std::string_view error) {
  CloseRun();
  Reply(RespOp::kOther, ErrorCode::kInvalidArgument,
        EncodedError("Protocol error: " + std::string(error)));
  read_closed_ = true;  // the stream cannot be resynchronized
}

// AUTH [user] secret: a user other than "default" must be the token's id.
void RespSession::Auth(const RespAction& a) {
  Access next = IdentifyBy(server_->auth, a.key, "resp", access_.peer());
  if (next.throttled() > 0) {  // the address failed too often: not even tried
    Reply(RespOp::kOther, ErrorCode::kResourceExhausted, TakeErrorReply(next.ThrottledError()));
    if (++failed_auths_ >= kMaxFailedAuths) read_closed_ = true;
    return;
  }
  const Principal* who = next.principal();
  if (!who || (!a.user.empty() && a.user != "default" && !who->open && a.user != who->id)) {
    Reply(RespOp::kOther, ErrorCode::kUnauthenticated, kWrongPassReply);
    // Guessing secrets costs a connection every few tries.
    if (++failed_auths_ >= kMaxFailedAuths) read_closed_ = true;
    return;
  }
  access_ = std::move(next);
  Reply(RespOp::kOther, kOk, "+OK\r\n");
}

// Consecutive INCRs of one key are collected into a run and served by a
// single Take when the run ends (CloseRun).
void RespSession::Incr(std::string_view key) {
  if (run_open_ && run_count_ < max_count_ && key == run_key_) {
    replies_.Push();
    ++run_count_;
    return;
  }
  CloseRun();
  run_open_ = true;
  run_key_ = key;
  run_seq_ = replies_.Push();
  run_count_ = 1;
}

void RespSession::CloseRun() {
  if (!run_open_) return;
  run_open_ = false;
  RespSlot& head = replies_.At(run_seq_);
  head.count = run_count_;
  head.read_at = read_at_;
  StartTake(run_key_, run_count_, run_seq_);
}

void RespSession::IncrBy(std::string_view key, int64_t n) {
  const uint64_t seq = replies_.Push();
  RespSlot& s = replies_.At(seq);
  s.incrby = true;
  s.count = n;
  s.read_at = read_at_;
  StartTake(key, n, seq);
}

void RespSession::StartTake(std::string_view key, int64_t count, uint64_t seq) {
  if (outstanding_++ == 0) self_ = shared_from_this();
  // 16 bytes of trivially copyable capture: std::function stores it inline.
  auto done = [s = this, seq](Result<IdBatch> r) { s->OnTaken(seq, std::move(r)); };
  // INCRBY: one contiguous block from one segment (its last ID answers).
  if (replies_.At(seq).incrby) {
    return ids_.Take(
        {.key = key, .count = count, .contiguous = true, .requester = access_.token_id()}, done);
  }
  ids_.Take({.key = key, .count = count, .requester = access_.token_id()}, done);
}

void RespSession::Query(const RespAction& a) {
  const uint64_t seq = replies_.Push();
  RespSlot& slot = replies_.At(seq);
  slot.read_at = read_at_;
  if (outstanding_++ == 0) self_ = shared_from_this();
  const RespOp op = a.op;
  auto answer = [s = this, seq, op](std::optional<ErrorCode> code, std::string text) {
    if (s->strand_.running_in_this_thread()) return s->Answered(seq, op, code, std::move(text));
    net::post(s->strand_,
              [self = s->shared_from_this(), seq, op, code, text = std::move(text)]() mutable {
                self->Answered(seq, op, code, std::move(text));
                self->Pump();
              });
  };
  std::vector<std::string> keys(a.keys.begin(), a.keys.end());
  if (a.query == RespAction::Query::kSetMinSeqs) {
    std::vector<MinSeqValue> values;
    for (size_t i = 0; i < keys.size(); ++i) values.push_back({std::move(keys[i]), a.values[i]});
    return ids_.SetMinSeqs(std::move(values), Hop::kMayForward, [answer](Status s) {
      if (!s) return answer(s.error().code, TakeErrorReply(s.error()));
      answer(kOk, "+OK\r\n");
    });
  }
  const bool single = a.single;
  const bool max = a.query == RespAction::Query::kMaxIds;
  auto values = [answer, single, max](Result<std::vector<int64_t>> r) {
    if (!r) return answer(r.error().code, TakeErrorReply(r.error()));
    std::string out;
    if (!single) resp::AppendArrayHeader(out, static_cast<int64_t>(r->size()));
    for (int64_t v : *r) {
      if (!max) {
        resp::AppendInteger(out, v);
      } else if (v == 0) {
        resp::AppendNullBulk(out);  // as GET of a missing key: nothing handed out
      } else {
        resp::AppendBulk(out, std::to_string(v));
      }
    }
    answer(kOk, std::move(out));
  };
  if (max) return ids_.MaxIds(std::move(keys), Hop::kMayForward, std::move(values));
  ids_.GetMinSeqs(std::move(keys), std::move(values));
}

void RespSession::Answered(uint64_t seq, RespOp op, std::optional<ErrorCode> code,
                           std::string text) {
  RespSlot& slot = replies_.At(seq);
  metrics_->CountRequest(Interface::kResp, RespOpName(op),
                         code ? WireErrorFor(*code).metric_label : "ok",
                         RequestMetrics::Since(slot.read_at));
  slot.text = std::move(text);
  slot.state = RespSlot::State::kText;
  std::shared_ptr<RespSession> keep;  // our callers hold their own reference
  if (--outstanding_ == 0) keep = std::move(self_);
  if (!closed_) replies_.DrainInto(out_);
}

// On the fast path the allocator answers inline, still on our strand, from
// inside Parse().
void RespSession::OnTaken(uint64_t seq, Result<IdBatch> r) {
  if (strand_.running_in_this_thread()) return Complete(seq, std::move(r));
  // `self_` keeps us alive until Complete() has run.
  net::post(strand_, [self = shared_from_this(), seq, r = std::move(r)]() mutable {
    self->Complete(seq, std::move(r));
    self->Pump();
  });
}

void RespSession::Complete(uint64_t seq, Result<IdBatch> r) {
  RespSlot& head = replies_.At(seq);
  if (head.incrby) {
    if (!r) {
      CountedTake(RespOp::kIncrBy, head, 1, r.error().code);
      head.text = TakeErrorReply(r.error());
      head.state = RespSlot::State::kText;
    } else if (r->ranges.size() == 1) {
      CountedTake(RespOp::kIncrBy, head, 1, kOk);
      head.value = r->ranges[0].last;
      head.state = RespSlot::State::kInteger;
    } else {  // a contiguous take never answers so; kept as a guard
      CountedTake(RespOp::kIncrBy, head, 1, ErrorCode::kFailedPrecondition);
      head.text = NotContiguousReply(head.count);
      head.state = RespSlot::State::kText;
    }
  } else if (r) {
    CountedTake(RespOp::kIncr, head, head.count, kOk);
    uint64_t k = seq;
    for (const IdRange& range : r->ranges) {
      for (int64_t id = range.first; id <= range.last; ++id) {
        RespSlot& s = replies_.At(k++);
        s.value = id;
        s.state = RespSlot::State::kInteger;
      }
    }
  } else {
    CountedTake(RespOp::kIncr, head, head.count, r.error().code);
    const std::string text = TakeErrorReply(r.error());
    const uint64_t end = seq + static_cast<uint64_t>(head.count);
    for (uint64_t k = seq; k < end; ++k) {
      RespSlot& s = replies_.At(k);
      s.text = text;
      s.state = RespSlot::State::kText;
    }
  }
  std::shared_ptr<RespSession> keep;  // our callers hold their own reference
  if (--outstanding_ == 0) keep = std::move(self_);
  if (!closed_) replies_.DrainInto(out_);
}

void RespSession::Reply(RespOp op, std::optional<ErrorCode> code, std::string_view encoded) {
  Counted(op, code);
  replies_.Reply(encoded, out_);
}

// One command answered now: counted, and its time since the read observed.
void RespSession::Counted(RespOp op, std::optional<ErrorCode> code) {
  metrics_->CountRequest(Interface::kResp, RespOpName(op),
                         code ? WireErrorFor(*code).metric_label : "ok",
                         RequestMetrics::Since(read_at_));
}

// `n` commands answered by one allocator call (an INCR run, or one INCRBY
// with n = 1): one counter add and one duration observation.
void RespSession::CountedTake(RespOp op, const RespSlot& head, int64_t n,
                              std::optional<ErrorCode> code) {
  metrics_->CountRequest(Interface::kResp, RespOpName(op),
                         code ? WireErrorFor(*code).metric_label : "ok",
                         RequestMetrics::Since(head.read_at), n);
}

}  // namespace seqd
