// BinaryDispatcher: the ID ops beyond NEXT_IDS (docs/protocol.md, "ID
// ops"): NEXT_BLOCK, NEXT_BLOCK_ONCE, MAX_IDS, MAX_IDS_TIMES, GET_MIN_SEQS and
// SET_MIN_SEQS. Each decodes
// its payload (proto/id_codec.h; INVALID_ARGUMENT if it does not parse
// exactly, TOO_LARGE past 1000 keys), checks the `ids` scope on every key,
// and calls services.ids; the answer comes back on the connection's
// strand (Later), held in flight as NEXT_IDS's is.
#include "proto/id_codec.h"
#include "server/service/services.h"
#include "server/binary/binary_dispatcher.h"
#include "server/binary/binary_dispatcher_impl.h"
#include "server/binary/binary_ops.h"

namespace seqd {
namespace {

constexpr size_t kMaxKeys = kMaxKeysPerCall;

}  // namespace

void BinaryDispatcher::HandleIdOp(const proto::FrameView& f, BinaryConnection& c) {
  const auto op = static_cast<proto::Opcode>(f.opcode);
  const uint32_t id = f.request_id;
  auto too_large = [&](size_t n) {
    if (n <= kMaxKeys) return false;
    AnswerError(c, op, id, proto::Status::kTooLarge,
                "at most " + std::to_string(kMaxKeys) + " keys per request");
    return true;
  };

  if (op == proto::kOpUserSeqs || op == proto::kOpSetUserSeqs) return HandleUserSeqOp(f, c);

  if (op == proto::kOpNextBlock) {
    const std::optional<proto::NextIdsRequest> req = proto::ParseNextIdsRequest(f.payload);
    if (!req) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "NEXT_BLOCK payload must be u16 key_length, key, u32 count");
    }
    return TakeBlock(f, c, req->key, req->count, req->on_behalf_of, {});
  }

  if (op == proto::kOpNextBlockOnce) {
    const std::optional<proto::NextBlockOnceRequest> req =
        proto::ParseNextBlockOnceRequest(f.payload);
    if (!req) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "NEXT_BLOCK_ONCE payload must be u16 key_length, key, u32 count, "
                         "u8 token_length, token");
    }
    return TakeBlock(f, c, req->key, req->count, req->on_behalf_of, req->token);
  }

  if (op == proto::kOpSetMinSeqs) {
    std::optional<std::vector<proto::KeyValueView>> items = proto::ParseKeyValueList(f.payload);
    if (!items) {
      return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                         "SET_MIN_SEQS payload must be u32 n, n x (u16 key_length, key, i64)");
    }
    if (too_large(items->size())) return;
    std::vector<MinSeqValue> values;
    values.reserve(items->size());
    for (const auto& [key, min_seq] : *items) {
      if (!Permit(f, c, key)) return;
      values.push_back(MinSeqValue{std::string(key), min_seq});
    }
    auto encode = [](std::string& out, uint32_t rid, const Ok&) {
      proto::AppendOkEmpty(out, proto::kOpSetMinSeqs, rid);
    };
    services_.ids.SetMinSeqs(std::move(values), HopOf(f), Later<Ok>(c, op, id, encode));
    return;
  }

  // MAX_IDS, MAX_IDS_TIMES and GET_MIN_SEQS: a list of keys, a list of
  // values back.
  std::optional<std::vector<std::string_view>> views = proto::ParseKeyList(f.payload);
  if (!views) {
    return AnswerError(c, op, id, proto::Status::kInvalidArgument,
                       std::string(BinaryOpFor(f.opcode)->name) +
                           " payload must be u32 n, n x (u16 key_length, key)");
  }
  if (too_large(views->size())) return;
  std::vector<std::string> keys;
  keys.reserve(views->size());
  for (std::string_view key : *views) {
    if (!Permit(f, c, key)) return;
    keys.emplace_back(key);
  }
  if (op == proto::kOpMaxIdsTimes) {
    auto encode = [](std::string& out, uint32_t rid, const MaxIdsTimes& v) {
      proto::AppendOkMaxIdsTimes(out, rid, v.max_ids, v.times_ms);
    };
    return services_.ids.MaxIdsWithTimes(std::move(keys), HopOf(f),
                                         Later<MaxIdsTimes>(c, op, id, encode));
  }
  auto encode = [op](std::string& out, uint32_t rid, const std::vector<int64_t>& v) {
    proto::AppendOkInt64List(out, op, rid, v);
  };
  auto done = Later<std::vector<int64_t>>(c, op, id, encode);
  if (op == proto::kOpMaxIds) return services_.ids.MaxIds(std::move(keys), HopOf(f), done);
  services_.ids.GetMinSeqs(std::move(keys), std::move(done));
}

void BinaryDispatcher::TakeBlock(const proto::FrameView& f, BinaryConnection& c,
                                 std::string_view key, uint32_t count,
                                 std::string_view on_behalf_of, std::string_view token) {
  if (!Permit(f, c, key)) return;
  std::string_view requester = c.access().token_id();
  if (!on_behalf_of.empty()) {
    if (!PermitAs(f, c, Permission::kCluster)) return;
    requester = on_behalf_of;
  }
  const auto op = static_cast<proto::Opcode>(f.opcode);
  auto encode = [op](std::string& out, uint32_t rid, const IdBatch& b) {
    proto::AppendOkBlock(out, op, rid, b.ranges.front().first, b.ranges.back().last);
  };
  services_.ids.Take({.key = key,
                      .count = count,
                      .contiguous = true,
                      .hop = HopOf(f),
                      .requester = requester,
                      .token = token},
                     Later<IdBatch>(c, op, f.request_id, encode));
}

}  // namespace seqd
