// BinaryDispatcher's templates, shared by binary_dispatcher.cc and
// binary_message_ops.cc only.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "proto/message_codec.h"
#include "server/service/services.h"
#include "server/service/wire_errors.h"
#include "server/binary/binary_dispatcher.h"

namespace seqd {

// A request with NO_FORWARD (a peer's forward, or a client that routes
// itself) is answered WRONG_OWNER rather than forwarded again.
inline Hop HopOf(const proto::FrameView& f) {
  return (f.flags & proto::kFlagNoForward) ? Hop::kNoForward : Hop::kMayForward;
}

template <typename T, typename Encode>
void BinaryDispatcher::WriteResult(BinaryConnection& c, proto::Opcode op, uint32_t id,
                                   const Result<T>& r, Encode& encode) {
  if (r.ok()) {
    Count(static_cast<uint8_t>(op), id, proto::Status::kOk);
    encode(c.out(), id, r.value());
  } else {
    const BinaryError w = ToBinaryError(r.error());
    Count(static_cast<uint8_t>(op), id, w.status);
    proto::AppendError(c.out(), op, id, w.status, w.message);
    if (w.status == proto::Status::kShuttingDown) c.CloseAfterAnswers();
  }
  c.Queued();
}

template <typename T, typename Encode>
std::function<void(Result<T>)> BinaryDispatcher::Later(BinaryConnection& c, proto::Opcode op,
                                                       uint32_t id, Encode encode) {
  c.Hold();
  return [this, conn = &c, op, id, encode = std::move(encode)](Result<T> r) mutable {
    conn->Deliver([this, op, id, encode = std::move(encode), r = std::move(r)](
                      BinaryConnection& on) mutable { WriteResult(on, op, id, r, encode); });
  };
}

template <typename Req>
std::optional<Req> BinaryDispatcher::Decode(const proto::FrameView& f, BinaryConnection& c) {
  std::optional<Req> req = proto::DecodeBody<Req>(f.payload);
  if (!req) {
    AnswerError(c, Req::kOpcode, f.request_id, proto::Status::kInvalidArgument,
                "malformed " + std::string(proto::MessageOpName(f.opcode)) +
                    " payload (see docs/protocol.md)");
  }
  return req;
}

}  // namespace seqd
