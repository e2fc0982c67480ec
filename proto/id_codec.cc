#include "proto/id_codec.h"

#include "proto/wire_io.h"

namespace seqd::proto {
namespace {

using wire::Put16;
using wire::Put32;
using wire::Put64;
using wire::Reader;

void AppendOk(std::string& out, Opcode opcode, uint32_t request_id, std::string_view result) {
  std::string payload;
  payload.reserve(2 + result.size());
  payload.push_back(0);  // u16 status OK
  payload.push_back(0);
  payload.append(result);
  AppendFrame(out, opcode, kFlagResponse, request_id, payload);
}

}  // namespace

bool IsIdOpcode(uint8_t opcode) { return opcode >= 0x05 && opcode <= 0x0C; }

std::string NextBlockRequestPayload(std::string_view key, uint32_t count,
                                    std::string_view on_behalf_of) {
  std::string payload;
  wire::PutStr16(payload, key);
  Put32(payload, count);
  if (!on_behalf_of.empty()) {
    payload.push_back(static_cast<char>(on_behalf_of.size()));
    payload.append(on_behalf_of);
  }
  return payload;
}

void AppendOkNextBlock(std::string& out, uint32_t request_id, int64_t first, int64_t last) {
  AppendOkBlock(out, kOpNextBlock, request_id, first, last);
}

void AppendOkBlock(std::string& out, Opcode opcode, uint32_t request_id, int64_t first,
                   int64_t last) {
  std::string result;
  Put64(result, first);
  Put64(result, last);
  AppendOk(out, opcode, request_id, result);
}

std::optional<IdRangeWire> ParseNextBlockResult(std::string_view result) {
  Reader r(result);
  IdRangeWire range;
  range.first = r.I64();
  range.last = r.I64();
  if (!r.done()) return std::nullopt;
  return range;
}

std::string NextBlockOnceRequestPayload(std::string_view key, uint32_t count,
                                        std::string_view token, std::string_view on_behalf_of) {
  std::string payload;
  wire::PutStr16(payload, key);
  Put32(payload, count);
  payload.push_back(static_cast<char>(token.size()));
  payload.append(token);
  if (!on_behalf_of.empty()) {
    payload.push_back(static_cast<char>(on_behalf_of.size()));
    payload.append(on_behalf_of);
  }
  return payload;
}

std::optional<NextBlockOnceRequest> ParseNextBlockOnceRequest(std::string_view payload) {
  // `u16 key_length, key, u32 count`, then the token, then the trailer.
  if (payload.size() < 2) return std::nullopt;
  const size_t key_len = (static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]);
  size_t at = 2 + key_len + 4;
  if (payload.size() < at + 1) return std::nullopt;
  NextBlockOnceRequest req;
  req.key = payload.substr(2, key_len);
  Reader count(payload.substr(2 + key_len, 4));
  req.count = count.U32();
  const size_t token_len = static_cast<uint8_t>(payload[at]);
  if (token_len == 0 || payload.size() < at + 1 + token_len) return std::nullopt;
  req.token = payload.substr(at + 1, token_len);
  at += 1 + token_len;
  if (payload.size() == at) return req;
  const size_t behalf_len = static_cast<uint8_t>(payload[at]);
  if (behalf_len == 0 || payload.size() != at + 1 + behalf_len) return std::nullopt;
  req.on_behalf_of = payload.substr(at + 1, behalf_len);
  return req;
}

std::string KeyListPayload(const std::vector<std::string_view>& keys) {
  std::string payload;
  Put32(payload, static_cast<uint32_t>(keys.size()));
  for (std::string_view k : keys) {
    wire::PutStr16(payload, k);
  }
  return payload;
}

std::optional<std::vector<std::string_view>> ParseKeyList(std::string_view payload) {
  Reader r(payload);
  const uint64_t n = r.U32();
  // Each key takes at least its 2 length bytes: no count the bytes cannot
  // hold allocates.
  if (!r.ok() || n > r.left() / 2) return std::nullopt;
  std::vector<std::string_view> keys;
  keys.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) keys.push_back(r.Str());
  if (!r.done()) return std::nullopt;
  return keys;
}

void AppendOkInt64List(std::string& out, Opcode opcode, uint32_t request_id,
                       const std::vector<int64_t>& values) {
  std::string result;
  result.reserve(4 + 8 * values.size());
  Put32(result, static_cast<uint32_t>(values.size()));
  for (int64_t v : values) Put64(result, v);
  AppendOk(out, opcode, request_id, result);
}

void AppendOkMaxIdsTimes(std::string& out, uint32_t request_id, const std::vector<int64_t>& max_ids,
                         const std::vector<int64_t>& times_ms) {
  std::string result;
  result.reserve(4 + 16 * max_ids.size());
  Put32(result, static_cast<uint32_t>(max_ids.size()));
  for (size_t i = 0; i < max_ids.size(); ++i) {
    Put64(result, max_ids[i]);
    Put64(result, times_ms[i]);
  }
  AppendOk(out, kOpMaxIdsTimes, request_id, result);
}

std::optional<std::vector<MaxIdTime>> ParseMaxIdsTimesResult(std::string_view result) {
  Reader r(result);
  const uint64_t n = r.U32();
  if (!r.ok() || r.left() != 16 * n) return std::nullopt;
  std::vector<MaxIdTime> values(static_cast<size_t>(n));
  for (MaxIdTime& v : values) {
    v.max_id = r.I64();
    v.time_ms = r.I64();
  }
  return values;
}

std::optional<std::vector<int64_t>> ParseInt64List(std::string_view result) {
  Reader r(result);
  const uint64_t n = r.U32();
  if (!r.ok() || r.left() != 8 * n) return std::nullopt;
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t& v : values) v = r.I64();
  return values;
}

std::string KeyValueListPayload(const std::vector<KeyValueView>& items) {
  std::string payload;
  Put32(payload, static_cast<uint32_t>(items.size()));
  for (const auto& [k, v] : items) {
    wire::PutStr16(payload, k);
    Put64(payload, v);
  }
  return payload;
}

std::optional<std::vector<KeyValueView>> ParseKeyValueList(std::string_view payload) {
  Reader r(payload);
  const uint64_t n = r.U32();
  if (!r.ok() || n > r.left() / 10) return std::nullopt;  // 2 + 8 bytes at least each
  std::vector<KeyValueView> items;
  items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view k = r.Str();
    const auto v = r.I64();
    items.emplace_back(k, v);
  }
  if (!r.done()) return std::nullopt;
  return items;
}

std::string UserSeqsPayload(std::string_view user, uint8_t field,
                            const std::vector<std::string_view>& convs) {
  std::string payload;
  wire::PutStr16(payload, user);
  payload.push_back(static_cast<char>(field));
  return payload + KeyListPayload(convs);
}

std::optional<UserSeqsRequest> ParseUserSeqsRequest(std::string_view payload) {
  Reader r(payload);
  UserSeqsRequest req;
  req.user = r.Str();
  req.field = r.U8();
  if (!r.ok() || req.field < 1 || req.field > 3) return std::nullopt;
  auto convs = ParseKeyList(payload.substr(payload.size() - r.left()));
  if (!convs) return std::nullopt;
  req.convs = std::move(*convs);
  return req;
}

std::string SetUserSeqsPayload(std::string_view user, uint8_t field, bool raise_only,
                               const std::vector<std::pair<std::string_view, int64_t>>& values) {
  std::string payload;
  wire::PutStr16(payload, user);
  payload.push_back(static_cast<char>(field));
  payload.push_back(raise_only ? 1 : 0);
  return payload + KeyValueListPayload(values);
}

std::optional<SetUserSeqsRequest> ParseSetUserSeqsRequest(std::string_view payload) {
  Reader r(payload);
  SetUserSeqsRequest req;
  req.user = r.Str();
  req.field = r.U8();
  const uint8_t raise = r.U8();
  if (!r.ok() || req.field < 1 || req.field > 3 || raise > 1) return std::nullopt;
  req.raise_only = raise == 1;
  auto values = ParseKeyValueList(payload.substr(payload.size() - r.left()));
  if (!values) return std::nullopt;
  req.values = std::move(*values);
  return req;
}

void AppendOkEmpty(std::string& out, Opcode opcode, uint32_t request_id) {
  AppendOk(out, opcode, request_id, {});
}

}  // namespace seqd::proto
