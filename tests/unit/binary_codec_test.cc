// The binary codec against the test vectors in docs/protocol.md, read from
// the document at test time so the spec and the tests cannot drift apart.
#include "proto/binary_codec.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/protocol_vectors.h"

using namespace seqd::proto;

namespace {

using seqd::testing::FromHex;
using seqd::testing::Vector;

// [0] good vectors, [1] bad ones.
std::vector<std::vector<Vector>> LoadVectors() {
  auto blocks = seqd::testing::LoadProtocolVectors("Test vectors");
  REQUIRE(blocks.size() == 2);
  REQUIRE(blocks[0].size() >= 7);
  REQUIRE(blocks[1].size() >= 4);
  return blocks;
}

// The request id named in a comment ("..., id 7, ..."), if any.
std::optional<uint32_t> CommentId(const std::string& comment) {
  const size_t p = comment.find(" id ");
  if (p == std::string::npos) return std::nullopt;
  return static_cast<uint32_t>(std::stoul(comment.substr(p + 4)));
}

// Re-encodes a decoded frame with the Append* functions.
std::string Reencode(const FrameView& f) {
  std::string out;
  const auto op = static_cast<Opcode>(f.opcode);
  if (!f.is_response()) {
    if (op == Opcode::kNextIds) {
      auto req = ParseNextIdsRequest(f.payload);
      REQUIRE(req);
      AppendNextIdsRequest(out, f.request_id, req->key, req->count, req->on_behalf_of);
    } else {
      AppendFrame(out, op, f.flags, f.request_id, f.payload);
    }
    return out;
  }
  auto res = ParseResponse(f.payload);
  REQUIRE(res);
  if (res->status != Status::kOk) {
    if (op == Opcode::kProtocolError) {
      CHECK(f.request_id == 0);
      CHECK(IsProtocolError(res->status));
      AppendProtocolError(out, res->status, res->message);
    } else {
      AppendError(out, op, f.request_id, res->status, res->message);
    }
  } else if (op == Opcode::kPing) {
    AppendOkPing(out, f.request_id, res->result);
  } else {
    REQUIRE(op == Opcode::kNextIds);
    auto ranges = ParseNextIdsResult(res->result);
    REQUIRE(ranges);
    AppendOkNextIds(out, f.request_id, ranges->data(), ranges->size());
  }
  return out;
}

Status StatusNamedIn(const std::string& comment) {
  for (Status s : {Status::kMalformedFrame, Status::kUnsupportedVersion, Status::kFrameTooLarge}) {
    if (comment.find(std::string(StatusName(s))) != std::string::npos) return s;
  }
  FAIL("no error code named in: " << comment);
  return Status::kOk;
}

std::string Be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}

}  // namespace

TEST_CASE("codec: good vectors decode whole, split at every byte, and re-encode") {
  const auto blocks = LoadVectors();
  for (const Vector& v : blocks[0]) {
    INFO(v.comment);
    // Every proper prefix (each in its own exact-size buffer) needs more.
    for (size_t k = 0; k < v.bytes.size(); ++k) {
      const std::string prefix = v.bytes.substr(0, k);
      DecodeResult r = DecodeFrame(prefix);
      CHECK_MESSAGE(r.state == DecodeState::kNeedMore, "prefix " << k);
    }
    DecodeResult whole = DecodeFrame(v.bytes);
    REQUIRE(whole.state == DecodeState::kFrame);
    CHECK(whole.consumed == v.bytes.size());
    CHECK(whole.frame.version == kVersion);
    if (auto id = CommentId(v.comment)) CHECK(whole.frame.request_id == *id);
    if (v.comment.find("response") != std::string::npos ||
        v.comment.find("error frame") != std::string::npos) {
      CHECK(whole.frame.is_response());
    } else {
      CHECK_FALSE(whole.frame.is_response());
    }
    CHECK(Reencode(whole.frame) == v.bytes);

    // Streamed in two pieces split at every byte, as a reader would.
    for (size_t k = 0; k <= v.bytes.size(); ++k) {
      std::string buf = v.bytes.substr(0, k);
      DecodeResult r = DecodeFrame(buf);
      if (k < v.bytes.size()) {
        CHECK(r.state == DecodeState::kNeedMore);
        buf += v.bytes.substr(k);
        r = DecodeFrame(buf);
      }
      REQUIRE(r.state == DecodeState::kFrame);
      CHECK(r.consumed == v.bytes.size());
      CHECK(r.frame.opcode == whole.frame.opcode);
      CHECK(r.frame.flags == whole.frame.flags);
      CHECK(r.frame.request_id == whole.frame.request_id);
      CHECK(r.frame.payload == whole.frame.payload);
    }
  }
}

TEST_CASE("codec: vectors carry the values their comments name") {
  const auto good = LoadVectors()[0];
  auto decode = [](const std::string& bytes) {
    DecodeResult r = DecodeFrame(bytes);
    REQUIRE(r.state == DecodeState::kFrame);
    return r.frame;
  };
  FrameView ping = decode(good[0].bytes);
  CHECK(ping.opcode == static_cast<uint8_t>(Opcode::kPing));
  CHECK(ping.payload == "hi");

  FrameView req = decode(good[2].bytes);
  auto parsed = ParseNextIdsRequest(req.payload);
  REQUIRE(parsed);
  CHECK(parsed->key == "order");
  CHECK(parsed->count == 3);

  auto one = ParseResponse(decode(good[3].bytes).payload);
  REQUIRE(one);
  CHECK(one->status == Status::kOk);
  CHECK(ParseNextIdsResult(one->result) == std::vector<IdRangeWire>{{101, 103}});

  auto two = ParseResponse(decode(good[4].bytes).payload);
  REQUIRE(two);
  CHECK(ParseNextIdsResult(two->result) == std::vector<IdRangeWire>{{99, 100}, {201, 202}});

  // Into a kept vector: replaces its contents (two ranges, then one).
  std::vector<IdRangeWire> kept;
  REQUIRE(ParseNextIdsResult(two->result, &kept));
  CHECK(kept == std::vector<IdRangeWire>{{99, 100}, {201, 202}});
  REQUIRE(ParseNextIdsResult(one->result, &kept));
  CHECK(kept == std::vector<IdRangeWire>{{101, 103}});
  CHECK_FALSE(ParseNextIdsResult(one->result.substr(1), &kept));
  CHECK_FALSE(ParseNextIdsResult(std::string_view("\x01\0\0", 3), &kept));

  auto unknown = ParseResponse(decode(good[5].bytes).payload);
  REQUIRE(unknown);
  CHECK(unknown->status == Status::kUnknownKey);
  CHECK(unknown->message == "unknown key 'x'");

  FrameView perr = decode(good[6].bytes);
  CHECK(perr.opcode == 0);
  auto version = ParseResponse(perr.payload);
  REQUIRE(version);
  CHECK(version->status == Status::kUnsupportedVersion);
  CHECK(version->message == "unsupported version 2");
  // The server's wording matches the document's.
  CHECK(DescribeDecodeError(FromHex("00000008 02 01 0000 00000001")) == "unsupported version 2");
}

TEST_CASE("codec: two frames back to back") {
  const auto good = LoadVectors()[0];
  const std::string both = good[0].bytes + good[2].bytes;
  DecodeResult a = DecodeFrame(both);
  REQUIRE(a.state == DecodeState::kFrame);
  CHECK(a.consumed == good[0].bytes.size());
  CHECK(a.frame.payload == "hi");
  DecodeResult b = DecodeFrame(std::string_view(both).substr(a.consumed));
  REQUIRE(b.state == DecodeState::kFrame);
  CHECK(b.consumed == good[2].bytes.size());
  CHECK(b.frame.request_id == 7);
  // A partial second frame after a whole one.
  const std::string partial = good[0].bytes + good[2].bytes.substr(0, 5);
  DecodeResult c = DecodeFrame(partial);
  REQUIRE(c.state == DecodeState::kFrame);
  CHECK(DecodeFrame(std::string_view(partial).substr(c.consumed)).state == DecodeState::kNeedMore);
}

TEST_CASE("codec: bad vectors give their documented code as soon as it is known") {
  const auto bad = LoadVectors()[1];
  for (const Vector& v : bad) {
    INFO(v.comment);
    const Status want = StatusNamedIn(v.comment);
    DecodeResult whole = DecodeFrame(v.bytes);
    REQUIRE(whole.state == DecodeState::kError);
    CHECK(whole.error == want);
    CHECK(IsProtocolError(whole.error));
    CHECK_FALSE(DescribeDecodeError(v.bytes).empty());
    // Prefixes: need more, then the error, and the same error from then on.
    bool seen = false;
    for (size_t k = 0; k <= v.bytes.size(); ++k) {
      const std::string prefix = v.bytes.substr(0, k);
      DecodeResult r = DecodeFrame(prefix);
      if (!seen && r.state == DecodeState::kNeedMore) continue;
      seen = true;
      CHECK_MESSAGE(r.state == DecodeState::kError, "prefix " << k);
      CHECK(r.error == want);
    }
    CHECK(seen);
    // The length is judged from the first 4 bytes alone.
    if (want == Status::kFrameTooLarge || v.bytes.substr(0, 4) == Be32(7)) {
      CHECK(DecodeFrame(v.bytes.substr(0, 4)).state == DecodeState::kError);
    }
    // Bytes after the bad header change nothing.
    CHECK(DecodeFrame(v.bytes + std::string(64, '\0')).error == want);
  }
}

TEST_CASE("codec: length limits") {
  // The largest allowed frame decodes; one more byte does not.
  std::string max = Be32(static_cast<uint32_t>(kMaxFrameSize - 4));
  max += FromHex("01 01 0000 00000001");
  CHECK(DecodeFrame(max).state == DecodeState::kNeedMore);
  max.resize(kMaxFrameSize, 'x');
  DecodeResult r = DecodeFrame(max);
  REQUIRE(r.state == DecodeState::kFrame);
  CHECK(r.consumed == kMaxFrameSize);
  CHECK(r.frame.payload.size() == kMaxFrameSize - kHeaderSize);
  CHECK(DecodeFrame(Be32(static_cast<uint32_t>(kMaxFrameSize - 3))).error ==
        Status::kFrameTooLarge);
  CHECK(DecodeFrame(Be32(0xFFFFFFFF)).error == Status::kFrameTooLarge);
  // A lower configured maximum, never a higher one.
  CHECK(DecodeFrame(Be32(60), 64).state == DecodeState::kNeedMore);
  CHECK(DecodeFrame(Be32(61), 64).error == Status::kFrameTooLarge);
  CHECK(DecodeFrame(Be32(static_cast<uint32_t>(kMaxFrameSize - 3)), 10 * kMaxFrameSize).error ==
        Status::kFrameTooLarge);
  CHECK(DescribeDecodeError(Be32(61), 64) == "frame too large: length 61 above 60");
  // Length 8 (empty payload) is fine; 0 is malformed.
  DecodeResult empty = DecodeFrame(FromHex("00000008 01 01 0000 00000005"));
  REQUIRE(empty.state == DecodeState::kFrame);
  CHECK(empty.frame.payload.empty());
  CHECK(DecodeFrame(Be32(0)).error == Status::kMalformedFrame);
  // The RESPONSE flag alone is valid at this layer; any other bit is not.
  CHECK(DecodeFrame(FromHex("00000008 01 01 0001 00000005")).state == DecodeState::kFrame);
  CHECK(DecodeFrame(FromHex("00000008 01 01 8000 00000005")).error == Status::kMalformedFrame);
  CHECK(DecodeFrame(FromHex("00000008 01 01 01")).state == DecodeState::kNeedMore);
}

TEST_CASE("codec: ParseNextIdsRequest rejects truncated and extra bytes") {
  std::string frame;
  AppendNextIdsRequest(frame, 3, "order", 42);
  DecodeResult r = DecodeFrame(frame);
  REQUIRE(r.state == DecodeState::kFrame);
  const std::string payload(r.frame.payload);
  REQUIRE(ParseNextIdsRequest(payload));
  for (size_t k = 0; k < payload.size(); ++k) {
    CHECK_MESSAGE(!ParseNextIdsRequest(payload.substr(0, k)), "truncated to " << k);
  }
  CHECK_FALSE(ParseNextIdsRequest(payload + "x"));
  CHECK_FALSE(ParseNextIdsRequest(payload + std::string(4, '\0')));
  // A key length pointing past the end.
  CHECK_FALSE(ParseNextIdsRequest(FromHex("ffff 00000001")));
  // Empty key is well formed at this layer (the server rejects it).
  auto empty = ParseNextIdsRequest(FromHex("0000 00000009"));
  REQUIRE(empty);
  CHECK(empty->key.empty());
  CHECK(empty->count == 9);
  auto big = ParseNextIdsRequest(FromHex("0001 61 ffffffff"));
  REQUIRE(big);
  CHECK(big->count == 0xFFFFFFFFu);
  CHECK(big->on_behalf_of.empty());
}

TEST_CASE("codec: NEXT_IDS carries an optional on_behalf_of trailer, exactly") {
  std::string frame;
  AppendNextIdsRequest(frame, 3, "order", 42, "alice");
  DecodeResult r = DecodeFrame(frame);
  REQUIRE(r.state == DecodeState::kFrame);
  const std::string payload(r.frame.payload);
  auto req = ParseNextIdsRequest(payload);
  REQUIRE(req);
  CHECK(req->key == "order");
  CHECK(req->count == 42);
  CHECK(req->on_behalf_of == "alice");
  CHECK(payload == std::string(FromHex("0005")) + "order" + FromHex("0000002a 05") + "alice");
  CHECK_FALSE(ParseNextIdsRequest(payload + "x"));  // bytes after the trailer
  CHECK_FALSE(ParseNextIdsRequest(payload.substr(0, payload.size() - 1)));  // short trailer
  CHECK_FALSE(ParseNextIdsRequest(FromHex("0001 61 00000001 00")));         // empty trailer
  const std::string longest(kMaxOnBehalfOf, 'a');
  std::string max_frame;
  AppendNextIdsRequest(max_frame, 4, "k", 1, longest);
  auto max_req = ParseNextIdsRequest(DecodeFrame(max_frame).frame.payload);
  REQUIRE(max_req);
  CHECK(max_req->on_behalf_of == longest);
}

TEST_CASE("codec: responses round trip") {
  std::string out;
  const std::vector<IdRangeWire> ranges = {
      {1, 1}, {-5, 7}, {INT64_MAX - 1, INT64_MAX}, {INT64_MIN, INT64_MIN + 3}};
  AppendOkNextIds(out, 0xDEADBEEF, ranges.data(), ranges.size());
  AppendOkNextIds(out, 2, nullptr, 0);
  AppendOkPing(out, 3, std::string("\0\xff", 2));
  AppendError(out, Opcode::kNextIds, 4, Status::kStoreUnavailable, "store down");
  AppendProtocolError(out, Status::kFrameTooLarge, "");

  std::string_view rest = out;
  auto next = [&rest] {
    DecodeResult r = DecodeFrame(rest);
    REQUIRE(r.state == DecodeState::kFrame);
    rest.remove_prefix(r.consumed);
    CHECK(r.frame.is_response());
    return r.frame;
  };
  FrameView f = next();
  CHECK(f.request_id == 0xDEADBEEF);
  auto res = ParseResponse(f.payload);
  REQUIRE(res);
  CHECK(res->status == Status::kOk);
  CHECK(ParseNextIdsResult(res->result) == ranges);
  CHECK_FALSE(ParseNextIdsResult(res->result.substr(1)));
  CHECK_FALSE(ParseNextIdsResult(std::string(res->result) + "x"));

  f = next();
  res = ParseResponse(f.payload);
  REQUIRE(res);
  auto none = ParseNextIdsResult(res->result);
  REQUIRE(none);
  CHECK(none->empty());

  f = next();
  CHECK(f.opcode == static_cast<uint8_t>(Opcode::kPing));
  res = ParseResponse(f.payload);
  REQUIRE(res);
  CHECK(res->result == std::string("\0\xff", 2));

  f = next();
  CHECK(f.request_id == 4);
  res = ParseResponse(f.payload);
  REQUIRE(res);
  CHECK(res->status == Status::kStoreUnavailable);
  CHECK(res->message == "store down");
  CHECK(res->result.empty());

  f = next();
  CHECK(f.opcode == 0);
  CHECK(f.request_id == 0);
  res = ParseResponse(f.payload);
  REQUIRE(res);
  CHECK(res->status == Status::kFrameTooLarge);
  CHECK(res->message.empty());
  CHECK(rest.empty());

  // Bad response payloads.
  CHECK_FALSE(ParseResponse(""));
  CHECK_FALSE(ParseResponse(FromHex("00")));
  CHECK_FALSE(ParseResponse(FromHex("0004")));            // error without a message length
  CHECK_FALSE(ParseResponse(FromHex("0004 0003 6162")));  // message shorter than its length
  CHECK_FALSE(ParseResponse(FromHex("0004 0001 6162")));  // bytes after the message
  CHECK_FALSE(ParseNextIdsResult(""));
  CHECK_FALSE(ParseNextIdsResult(FromHex("ffffffff")));
}

TEST_CASE("codec: error messages are cut at 1024 bytes") {
  std::string out;
  AppendError(out, Opcode::kPing, 1, Status::kInvalidArgument, std::string(5000, 'm'));
  DecodeResult r = DecodeFrame(out);
  REQUIRE(r.state == DecodeState::kFrame);
  auto res = ParseResponse(r.frame.payload);
  REQUIRE(res);
  CHECK(res->message == std::string(kMaxErrorMessage, 'm'));

  // Exactly 1024 bytes pass unchanged.
  out.clear();
  AppendProtocolError(out, Status::kMalformedFrame, std::string(kMaxErrorMessage, 'z'));
  res = ParseResponse(DecodeFrame(out).frame.payload);
  REQUIRE(res);
  CHECK(res->message.size() == kMaxErrorMessage);

  // A multi-byte UTF-8 character straddling the limit is not split.
  std::string utf8(kMaxErrorMessage - 1, 'a');
  utf8 += "\xc3\xa9tail";  // é at bytes 1023-1024
  out.clear();
  AppendError(out, Opcode::kNextIds, 2, Status::kUnknownKey, utf8);
  res = ParseResponse(DecodeFrame(out).frame.payload);
  REQUIRE(res);
  CHECK(res->message == std::string(kMaxErrorMessage - 1, 'a'));
}

TEST_CASE("codec: status names") {
  CHECK(StatusName(Status::kOk) == "OK");
  CHECK(StatusName(Status::kInvalidArgument) == "INVALID_ARGUMENT");
  CHECK(StatusName(Status::kUnknownKey) == "UNKNOWN_KEY");
  CHECK(StatusName(Status::kKeyExists) == "KEY_EXISTS");
  CHECK(StatusName(Status::kStoreUnavailable) == "STORE_UNAVAILABLE");
  CHECK(StatusName(Status::kShuttingDown) == "SHUTTING_DOWN");
  CHECK(StatusName(Status::kInternal) == "INTERNAL");
  CHECK(StatusName(Status::kUnknownOpcode) == "UNKNOWN_OPCODE");
  CHECK(StatusName(Status::kMalformedFrame) == "MALFORMED_FRAME");
  CHECK(StatusName(Status::kUnsupportedVersion) == "UNSUPPORTED_VERSION");
  CHECK(StatusName(Status::kFrameTooLarge) == "FRAME_TOO_LARGE");
  CHECK_FALSE(IsProtocolError(Status::kUnknownOpcode));
  CHECK(IsProtocolError(Status::kMalformedFrame));
}
