// BinaryDispatcher: the message store ops (0x20-0x2B), SUBSCRIBE and
// UNSUBSCRIBE (docs/protocol.md, "Message store").
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/message_codec.h"
#include "server/service/message_api.h"
#include "server/service/message_wire.h"
#include "server/service/services.h"
#include "server/binary/binary_dispatcher.h"
#include "server/binary/binary_dispatcher_impl.h"
#include "server/binary/binary_ops.h"

namespace seqd {
namespace {

proto::MemberRes ToWire(const MemberView& v) {
  return proto::MemberRes{{v.state.min_seq, v.state.max_seq, v.state.read_seq}};
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

std::optional<std::string> OptString(std::string_view s) {
  if (s.empty()) return std::nullopt;
  return std::string(s);
}

// The leading messages of `messages` whose encoding, after `fixed` bytes of
// frame, fits in `max_frame`.
std::vector<proto::MessageView> Fitting(const std::vector<StoredMessage>& messages, size_t fixed,
                                        size_t max_frame) {
  std::vector<proto::MessageView> out;
  out.reserve(messages.size());
  size_t size = fixed;
  for (const StoredMessage& m : messages) {
    proto::MessageView v = MessageWire(m);
    size += proto::EncodedSize(v);
    if (size > max_frame) break;
    out.push_back(v);
  }
  return out;
}

// Encodes a fixed-shape result.
template <typename Wire, typename T, typename Convert>
auto Encoder(proto::Opcode op, Convert convert) {
  return [op, convert](std::string& out, uint32_t id, const T& value) {
    proto::AppendOkResult(out, op, id, convert(value));
  };
}

}  // namespace

template <typename Req>
std::optional<Req> BinaryDispatcher::DecodePermitted(const proto::FrameView& f,
                                                     BinaryConnection& c) {
  std::optional<Req> q = Decode<Req>(f, c);
  if (!q) return std::nullopt;
  if constexpr (requires { q->conv_ids; }) {
    for (std::string_view conv : q->conv_ids) {
      if (!Permit(f, c, conv)) return std::nullopt;
    }
  } else {
    if (!Permit(f, c, q->conv_id)) return std::nullopt;
  }
  return q;
}

void BinaryDispatcher::HandleMessageOp(const proto::FrameView& f, BinaryConnection& c) {
  MessageApi& svc = services_.messages;
  const uint32_t id = f.request_id;
  const auto op = static_cast<proto::Opcode>(f.opcode);
  if (op == proto::kOpSend) {
    auto q = DecodePermitted<proto::SendReq>(f, c);
    if (!q) return;
    SendRequest req{std::string(q->conv_id), std::string(q->sender_id),
                    std::string(q->client_msg_id), q->content_type, std::string(q->payload)};
    services_.messages.Send(
        std::move(req), HopOf(f),
        Later<AppendOutcome>(
            c, op, id, Encoder<proto::SendRes, AppendOutcome>(op, [](const AppendOutcome& o) {
              return proto::SendRes{o.seq, o.server_msg_id, o.send_time_ms, o.duplicate};
            })));
    return;
  }
  if (op == proto::kOpPullRange) {
    auto q = DecodePermitted<proto::PullRangeReq>(f, c);
    if (!q) return;
    PullRequest req;
    req.conv_id = std::string(q->conv_id);
    req.from_seq = q->from_seq;
    if (q->to_seq != 0) req.to_seq = q->to_seq;
    req.limit = q->limit;
    req.descending = q->descending;
    req.user_id = OptString(q->user_id);
    const size_t max_frame = limits_.max_frame_bytes;
    svc.Pull(std::move(req),
             Later<MessagePage>(
                 c, op, id, [max_frame](std::string& out, uint32_t rid, const MessagePage& p) {
                   proto::PullRangeRes res;
                   res.messages = Fitting(p.messages, proto::kHeaderSize + 7, max_frame);
                   if (res.messages.empty() && !p.messages.empty()) {
                     proto::AppendError(out, proto::kOpPullRange, rid, proto::Status::kTooLarge,
                                        "message does not fit in a frame");
                     return;
                   }
                   res.is_end = !p.more && res.messages.size() == p.messages.size();
                   proto::AppendOkResult(out, proto::kOpPullRange, rid, res);
                 }));
    return;
  }
  if (op == proto::kOpPullSeqs) {
    auto q = DecodePermitted<proto::PullSeqsReq>(f, c);
    if (!q) return;
    const size_t max_frame = limits_.max_frame_bytes;
    svc.PullSeqs(
        std::string(q->conv_id), std::move(q->seqs), OptString(q->user_id),
        Later<std::vector<StoredMessage>>(
            c, op, id,
            [max_frame](std::string& out, uint32_t rid, const std::vector<StoredMessage>& ms) {
              proto::PullSeqsRes res;
              res.messages = Fitting(ms, proto::kHeaderSize + 6, max_frame);
              if (res.messages.empty() && !ms.empty()) {
                proto::AppendError(out, proto::kOpPullSeqs, rid, proto::Status::kTooLarge,
                                   "message does not fit in a frame");
                return;
              }
              proto::AppendOkResult(out, proto::kOpPullSeqs, rid, res);
            }));
    return;
  }
  if (op == proto::kOpMaxSeqs) {
    auto q = DecodePermitted<proto::MaxSeqsReq>(f, c);
    if (!q) return;
    svc.MaxSeqs(Strings(q->conv_ids),
                Later<std::vector<int64_t>>(
                    c, op, id,
                    Encoder<proto::MaxSeqsRes, std::vector<int64_t>>(
                        op, [](const std::vector<int64_t>& v) { return proto::MaxSeqsRes{v}; })));
    return;
  }
  if (op == proto::kOpSyncUser) {
    auto q = DecodePermitted<proto::SyncUserReq>(f, c);
    if (!q) return;
    svc.SyncUser(std::string(q->user_id), Strings(q->conv_ids),
                 Later<std::vector<ConvSync>>(
                     c, op, id, [](std::string& out, uint32_t rid, const std::vector<ConvSync>& v) {
                       proto::SyncUserRes res;
                       res.convs.reserve(v.size());
                       for (const ConvSync& c : v) {
                         res.convs.push_back(
                             {c.conv_id, c.max_seq, c.min_seq, c.read_seq, c.unread, c.member});
                       }
                       proto::AppendOkResult(out, proto::kOpSyncUser, rid, res);
                     }));
    return;
  }
  auto member_encoder = [op](std::string& out, uint32_t rid, const MemberView& v) {
    proto::AppendOkResult(out, op, rid, ToWire(v));
  };
  if (op == proto::kOpMarkRead) {
    auto q = DecodePermitted<proto::MarkReadReq>(f, c);
    if (!q) return;
    svc.MarkRead(std::string(q->conv_id), std::string(q->user_id), q->read_seq,
                 Later<MemberView>(c, op, id, member_encoder));
    return;
  }
  if (op == proto::kOpSetMember) {
    auto q = DecodePermitted<proto::SetMemberReq>(f, c);
    if (!q) return;
    svc.SetMember(std::string(q->conv_id), std::string(q->user_id), q->min_seq, q->max_seq,
                  q->clear_max, Later<MemberView>(c, op, id, member_encoder));
    return;
  }
  if (op == proto::kOpGetMember) {
    auto q = DecodePermitted<proto::GetMemberReq>(f, c);
    if (!q) return;
    svc.GetMember(std::string(q->conv_id), std::string(q->user_id),
                  Later<MemberView>(c, op, id, member_encoder));
    return;
  }
  if (op == proto::kOpSetStatus) {
    auto q = DecodePermitted<proto::SetStatusReq>(f, c);
    if (!q) return;
    svc.SetStatus(
        std::string(q->conv_id), q->seq, static_cast<MessageStatus>(q->status),
        Later<StoredMessage>(c, op, id, [](std::string& out, uint32_t rid, const StoredMessage& m) {
          proto::AppendOkResult(out, proto::kOpSetStatus, rid, proto::MessageRes{MessageWire(m)});
        }));
    return;
  }
  if (op == proto::kOpSetConvMinSeq) {
    auto q = DecodePermitted<proto::SetConvMinSeqReq>(f, c);
    if (!q) return;
    svc.SetConvMinSeq(
        std::string(q->conv_id), q->min_seq,
        Later<int64_t>(c, op, id, Encoder<proto::MinSeqRes, int64_t>(op, [](int64_t v) {
                         return proto::MinSeqRes{v};
                       })));
    return;
  }
  if (op == proto::kOpSubscribe) return HandleSubscribe(f, c);
  if (op == proto::kOpUnsubscribe) return HandleUnsubscribe(f, c);
  AnswerError(c, op, id, proto::Status::kInvalidArgument,
              std::string(proto::MessageOpName(f.opcode)) + " is sent by the server only");
}

void BinaryDispatcher::HandleSubscribe(const proto::FrameView& f, BinaryConnection& c) {
  const auto op = proto::kOpSubscribe;
  auto q = DecodePermitted<proto::SubscribeReq>(f, c);
  if (!q) return;
  if (!ConvListFits(f, c, q->conv_ids.size())) return;
  SubscriptionMap& subs = c.subscriptions();
  // All or nothing: new subscriptions are made aside, then kept.
  SubscriptionMap added;
  for (std::string_view conv : q->conv_ids) {
    if (subs.count(conv) || added.count(conv)) continue;
    if (subs.size() + added.size() >= limits_.max_subscriptions) {
      return AnswerError(
          c, op, f.request_id, proto::Status::kTooLarge,
          "at most " + std::to_string(limits_.max_subscriptions) + " subscriptions per connection");
    }
    Result<std::unique_ptr<Subscription>> sub =
        services_.messages.Subscribe(std::string(conv), HopOf(f), c.PushListener());
    if (!sub.ok()) {
      const BinaryError w = ToBinaryError(sub.error());
      return AnswerError(c, op, f.request_id, w.status, w.message);
    }
    added.emplace(std::string(conv), std::move(sub.value()));
  }
  subs.merge(added);
  AnswerOkEmpty(f, c);
}

bool BinaryDispatcher::ConvListFits(const proto::FrameView& f, BinaryConnection& c, size_t n) {
  if (n <= proto::kMaxWireList) return true;
  AnswerError(c, static_cast<proto::Opcode>(f.opcode), f.request_id, proto::Status::kTooLarge,
              "at most " + std::to_string(proto::kMaxWireList) + " conversations per " +
                  std::string(proto::MessageOpName(f.opcode)));
  return false;
}

void BinaryDispatcher::AnswerOkEmpty(const proto::FrameView& f, BinaryConnection& c) {
  const auto op = static_cast<proto::Opcode>(f.opcode);
  Count(f.opcode, f.request_id, proto::Status::kOk);
  proto::AppendOkResult(c.out(), op, f.request_id, proto::EmptyRes{});
  c.Queued();
}

void BinaryDispatcher::RecheckSubscriptions(BinaryConnection& c) {
  SubscriptionMap& subs = c.subscriptions();
  if (subs.empty()) return;
  Access& access = c.access();
  access.Revalidate(services_.auth);
  std::optional<Error> refused;
  if (!access.principal()) {
    access.AuditUnauthenticated(BinaryOpLabel(static_cast<uint8_t>(proto::kOpSubscribe)));
    refused = MakeError(ErrorCode::kUnauthenticated, "the connection's token was revoked");
  } else if (const BinaryOpRow* row = BinaryOpFor(static_cast<uint8_t>(proto::kOpSubscribe));
             row && row->permission) {
    for (const auto& [conv, sub] : subs) {
      Status s = access.Check(*row->permission, conv,
                              BinaryOpLabel(static_cast<uint8_t>(proto::kOpSubscribe)));
      if (!s) {
        refused = s.error();
        break;
      }
    }
  }
  if (!refused) return;
  subs.clear();  // never called again once destroyed
  const BinaryError w = ToBinaryError(*refused);
  proto::AppendPushDropped(c.out(), w.status, w.message + ": subscriptions dropped");
}

void BinaryDispatcher::HandleUnsubscribe(const proto::FrameView& f, BinaryConnection& c) {
  auto q = Decode<proto::UnsubscribeReq>(f, c);
  if (!q) return;
  if (!ConvListFits(f, c, q->conv_ids.size())) return;
  SubscriptionMap& subs = c.subscriptions();
  for (std::string_view conv : q->conv_ids) {
    auto it = subs.find(conv);
    if (it != subs.end()) subs.erase(it);  // never called again once destroyed
  }
  AnswerOkEmpty(f, c);
}

}  // namespace seqd
