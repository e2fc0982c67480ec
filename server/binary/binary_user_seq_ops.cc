// BinaryDispatcher: OpenIM's per-user seqs (docs/protocol.md, "ID ops"):
// USER_SEQS reads one field of a user's seqs in many conversations,
// SET_USER_SEQS sets it (or raises it). Each decodes its payload
// (proto/id_codec.h; INVALID_ARGUMENT if it does not parse exactly,
// TOO_LARGE past 1000 conversations), checks the `ids` scope on every
// conversation, and calls services.ids; the answer comes back on the
// connection's strand (Later).
#include "proto/id_codec.h"
#include "server/service/services.h"
#include "server/binary/binary_dispatcher.h"
#include "server/binary/binary_dispatcher_impl.h"
#include "server/binary/binary_ops.h"

namespace seqd {

void BinaryDispatcher::HandleUserSeqOp(const proto::FrameView& f, BinaryConnection& c) {
  const auto op = static_cast<proto::Opcode>(f.opcode);
  const uint32_t id = f.request_id;
  constexpr size_t kMaxConvs = kMaxKeysPerCall;
  auto too_large = [&](size_t n) {
    if (n <= kMaxConvs) return false;
    AnswerError(c, op, id, proto::Status::kTooLarge,
                "at most " + std::to_string(kMaxConvs) + " conversations per request");
    return true;
  };

  if (op == proto::kOpUserSeqs) {
    std::optional<proto::UserSeqsRequest> req = proto::ParseUserSeqsRequest(f.payload);
    if (!req) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "USER_SEQS payload must be u16 user_length, user, u8 field (1 min, "
                         "2 max, 3 read), u32 n, n x (u16 conv_length, conv)");
    }
    if (too_large(req->convs.size())) return;
    std::vector<std::string> convs;
    convs.reserve(req->convs.size());
    for (std::string_view conv : req->convs) {
      if (!Permit(f, c, conv)) return;
      convs.emplace_back(conv);
    }
    auto encode = [](std::string& out, uint32_t rid, const std::vector<int64_t>& v) {
      proto::AppendOkInt64List(out, proto::kOpUserSeqs, rid, v);
    };
    return services_.ids.GetUserSeqs(std::string(req->user), static_cast<UserSeqField>(req->field),
                                     std::move(convs),
                                     Later<std::vector<int64_t>>(c, op, id, encode));
  }

  std::optional<proto::SetUserSeqsRequest> req = proto::ParseSetUserSeqsRequest(f.payload);
  if (!req) {
    return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                       "SET_USER_SEQS payload must be u16 user_length, user, u8 field (1 min, "
                       "2 max, 3 read), u8 raise_only (0 or 1), u32 n, "
                       "n x (u16 conv_length, conv, i64 seq)");
  }
  if (too_large(req->values.size())) return;
  std::vector<UserSeqValue> values;
  values.reserve(req->values.size());
  for (const auto& [conv, seq] : req->values) {
    if (!Permit(f, c, conv)) return;
    values.push_back(UserSeqValue{std::string(conv), seq});
  }
  auto encode = [](std::string& out, uint32_t rid, const Ok&) {
    proto::AppendOkEmpty(out, proto::kOpSetUserSeqs, rid);
  };
  services_.ids.SetUserSeqs(std::string(req->user), static_cast<UserSeqField>(req->field),
                            req->raise_only, std::move(values), Later<Ok>(c, op, id, encode));
}

}  // namespace seqd
