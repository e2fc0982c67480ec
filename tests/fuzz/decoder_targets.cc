#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/cluster_codec.h"
#include "proto/message_codec.h"
#include "proto/resp_codec.h"
#include "proto/snowflake_codec.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seqd::fuzz {

namespace {

// Decodes `bytes` as T; a value that decodes must re-encode to the same bytes.
template <typename T>
void RoundTrip(std::string_view bytes) {
  if (auto v = proto::DecodeBody<T>(bytes)) {
    std::string again;
    proto::EncodeBody(again, *v);
    FUZZ_CHECK(again == bytes);
  }
}

// Every message-store request and result decoder over one payload.
void MessageBodies(std::string_view payload) {
  RoundTrip<proto::SendReq>(payload);
  RoundTrip<proto::PullRangeReq>(payload);
  RoundTrip<proto::PullSeqsReq>(payload);
  RoundTrip<proto::MaxSeqsReq>(payload);
  RoundTrip<proto::SyncUserReq>(payload);
  RoundTrip<proto::MarkReadReq>(payload);
  RoundTrip<proto::SetMemberReq>(payload);
  RoundTrip<proto::GetMemberReq>(payload);
  RoundTrip<proto::SetStatusReq>(payload);
  RoundTrip<proto::SetConvMinSeqReq>(payload);
  RoundTrip<proto::SubscribeReq>(payload);
  RoundTrip<proto::SendRes>(payload);
  RoundTrip<proto::PullRangeRes>(payload);
  RoundTrip<proto::PullSeqsRes>(payload);
  RoundTrip<proto::MaxSeqsRes>(payload);
  RoundTrip<proto::SyncUserRes>(payload);
  RoundTrip<proto::MemberRes>(payload);
  RoundTrip<proto::MessageRes>(payload);
  RoundTrip<proto::MinSeqRes>(payload);
  RoundTrip<proto::PushMessage>(payload);
}

// The snowflake request and result parsers over one payload: whatever
// parses must re-encode to the same bytes.
void SnowflakeBodies(std::string_view payload) {
  if (auto count = proto::ParseSnowflakeRequest(payload)) {
    FUZZ_CHECK(proto::SnowflakeRequestPayload(*count) == payload);
  }
  if (auto id = proto::ParseSnowflakeDecodeRequest(payload)) {
    FUZZ_CHECK(proto::SnowflakeDecodeRequestPayload(*id) == payload);
  }
  if (payload.size() < 2) return;
  const std::string_view result = payload.substr(2);  // after a u16 status
  if (auto ids = proto::ParseSnowflakeResult(result)) {
    std::string frame;
    proto::AppendOkSnowflake(frame, 1, ids->data(), ids->size());
    FUZZ_CHECK(std::string_view(frame).substr(proto::kHeaderSize + 2) == result);
  }
  if (auto fields = proto::ParseSnowflakeDecodeResult(result)) {
    std::string frame;
    proto::AppendOkSnowflakeDecode(frame, 1, *fields);
    FUZZ_CHECK(std::string_view(frame).substr(proto::kHeaderSize + 2) == result);
  }
}

// The PLACEMENT parser over a request's payload and over a result (after
// a u16 status): a version that parses must re-encode to the same bytes.
void PlacementBodies(std::string_view payload) {
  if (auto version = proto::ParsePlacementVersion(payload)) {
    FUZZ_CHECK(*version >= 0);
    std::string frame;
    proto::AppendPlacementRequest(frame, 1, *version);
    FUZZ_CHECK(std::string_view(frame).substr(proto::kHeaderSize) == payload);
  }
  if (payload.size() < 2) return;
  if (auto version = proto::ParsePlacementVersion(payload.substr(2))) {
    std::string frame;
    proto::AppendOkPlacement(frame, 1, *version);
    FUZZ_CHECK(std::string_view(frame).substr(proto::kHeaderSize + 2) == payload.substr(2));
  }
}

}  // namespace

void BinaryDecoder(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Whole input, frame after frame; every decoded frame must re-encode to the
  // bytes it came from.
  std::string_view rest = input;
  while (!rest.empty()) {
    proto::DecodeResult r = proto::DecodeFrame(rest);
    if (r.state != proto::DecodeState::kFrame) break;
    FUZZ_CHECK(r.consumed >= proto::kHeaderSize && r.consumed <= rest.size());
    FUZZ_CHECK(r.frame.payload.size() == r.consumed - proto::kHeaderSize);
    std::string again;
    proto::AppendFrame(again, static_cast<proto::Opcode>(r.frame.opcode), r.frame.flags,
                       r.frame.request_id, r.frame.payload);
    FUZZ_CHECK(again == rest.substr(0, r.consumed));
    if (auto req = proto::ParseNextIdsRequest(r.frame.payload)) {
      std::string encoded;
      proto::AppendNextIdsRequest(encoded, r.frame.request_id, req->key, req->count,
                                  req->on_behalf_of);
      proto::DecodeResult back = proto::DecodeFrame(encoded);
      FUZZ_CHECK(back.state == proto::DecodeState::kFrame);
      FUZZ_CHECK(back.frame.payload == r.frame.payload);
    }
    if (auto resp = proto::ParseResponse(r.frame.payload)) {
      if (resp->status == proto::Status::kOk) (void)proto::ParseNextIdsResult(resp->result);
    }
    SnowflakeBodies(r.frame.payload);
    PlacementBodies(r.frame.payload);
    if (proto::IsMessageOpcode(r.frame.opcode)) {
      MessageBodies(r.frame.payload);
      if (r.frame.payload.size() >= 2) MessageBodies(r.frame.payload.substr(2));  // a result
    }
    rest.remove_prefix(r.consumed);
  }
  // Every prefix: a prefix of a frame is never an error the whole is not.
  const proto::DecodeResult whole = proto::DecodeFrame(input);
  for (size_t cut = 0; cut < size && cut < 64; ++cut) {
    proto::DecodeResult part = proto::DecodeFrame(input.substr(0, cut));
    if (part.state == proto::DecodeState::kError) {
      FUZZ_CHECK(whole.state == proto::DecodeState::kError && whole.error == part.error);
    }
    if (part.state == proto::DecodeState::kFrame)
      FUZZ_CHECK(whole.state == proto::DecodeState::kFrame);
  }
}

void RespDecoder(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const resp::RespLimits limits;
  std::vector<std::string_view> args;
  std::string_view rest = input;
  for (int commands = 0; !rest.empty() && commands < 1000; ++commands) {
    resp::ParseResult r = resp::ParseCommand(rest, limits, &args);
    if (r.state != resp::ParseState::kCommand) break;
    FUZZ_CHECK(r.consumed > 0 && r.consumed <= rest.size());
    FUZZ_CHECK(args.size() <= limits.max_args);
    for (std::string_view a : args) {
      // Every word points into the input and respects the limits.
      FUZZ_CHECK(a.data() >= rest.data() && a.data() + a.size() <= rest.data() + rest.size());
      FUZZ_CHECK(a.size() <= limits.max_bulk_length);
    }
    rest.remove_prefix(r.consumed);
  }
  std::string out;
  resp::AppendError(out, input.substr(0, 64));
  FUZZ_CHECK(out.find('\r') == out.size() - 2);  // the message cannot break the framing
}

}  // namespace seqd::fuzz
