#include "proto/id_codec.h"

namespace seqd::proto {
namespace {

void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void Put32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void Put64(std::string& out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  Put32(out, static_cast<uint32_t>(u >> 32));
  Put32(out, static_cast<uint32_t>(u));
}

// Reads big-endian values off the front of a view; `ok` turns false (and
// stays so) on the first read past the end.
struct Reader {
  std::string_view in;
  bool ok = true;

  uint64_t Uint(size_t bytes) {
    if (!ok || in.size() < bytes) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
    in.remove_prefix(bytes);
    return v;
  }
  std::string_view Str() {
    const auto n = static_cast<size_t>(Uint(2));
    if (!ok || in.size() < n) {
      ok = false;
      return {};
    }
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
  bool Done() const { return ok && in.empty(); }
};

void AppendOk(std::string& out, Opcode opcode, uint32_t request_id, std::string_view result) {
  std::string payload;
  payload.reserve(2 + result.size());
  payload.push_back(0);  // u16 status OK
  payload.push_back(0);
  payload.append(result);
  AppendFrame(out, opcode, kFlagResponse, request_id, payload);
}

}  // namespace

bool IsIdOpcode(uint8_t opcode) { return opcode >= 0x05 && opcode <= 0x08; }

std::string NextBlockRequestPayload(std::string_view key, uint32_t count,
                                    std::string_view on_behalf_of) {
  std::string payload;
  Put16(payload, static_cast<uint16_t>(key.size()));
  payload.append(key);
  Put32(payload, count);
  if (!on_behalf_of.empty()) {
    payload.push_back(static_cast<char>(on_behalf_of.size()));
    payload.append(on_behalf_of);
  }
  return payload;
}

void AppendOkNextBlock(std::string& out, uint32_t request_id, int64_t first, int64_t last) {
  std::string result;
  Put64(result, first);
  Put64(result, last);
  AppendOk(out, kOpNextBlock, request_id, result);
}

std::optional<IdRangeWire> ParseNextBlockResult(std::string_view result) {
  Reader r{result};
  IdRangeWire range;
  range.first = static_cast<int64_t>(r.Uint(8));
  range.last = static_cast<int64_t>(r.Uint(8));
  if (!r.Done()) return std::nullopt;
  return range;
}

std::string KeyListPayload(const std::vector<std::string_view>& keys) {
  std::string payload;
  Put32(payload, static_cast<uint32_t>(keys.size()));
  for (std::string_view k : keys) {
    Put16(payload, static_cast<uint16_t>(k.size()));
    payload.append(k);
  }
  return payload;
}

std::optional<std::vector<std::string_view>> ParseKeyList(std::string_view payload) {
  Reader r{payload};
  const uint64_t n = r.Uint(4);
  // Each key takes at least its 2 length bytes: no count the bytes cannot
  // hold allocates.
  if (!r.ok || n > r.in.size() / 2) return std::nullopt;
  std::vector<std::string_view> keys;
  keys.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) keys.push_back(r.Str());
  if (!r.Done()) return std::nullopt;
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

std::optional<std::vector<int64_t>> ParseInt64List(std::string_view result) {
  Reader r{result};
  const uint64_t n = r.Uint(4);
  if (!r.ok || r.in.size() != 8 * n) return std::nullopt;
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t& v : values) v = static_cast<int64_t>(r.Uint(8));
  return values;
}

std::string KeyValueListPayload(const std::vector<KeyValueView>& items) {
  std::string payload;
  Put32(payload, static_cast<uint32_t>(items.size()));
  for (const auto& [k, v] : items) {
    Put16(payload, static_cast<uint16_t>(k.size()));
    payload.append(k);
    Put64(payload, v);
  }
  return payload;
}

std::optional<std::vector<KeyValueView>> ParseKeyValueList(std::string_view payload) {
  Reader r{payload};
  const uint64_t n = r.Uint(4);
  if (!r.ok || n > r.in.size() / 10) return std::nullopt;  // 2 + 8 bytes at least each
  std::vector<KeyValueView> items;
  items.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view k = r.Str();
    const auto v = static_cast<int64_t>(r.Uint(8));
    items.emplace_back(k, v);
  }
  if (!r.Done()) return std::nullopt;
  return items;
}

void AppendOkEmpty(std::string& out, Opcode opcode, uint32_t request_id) {
  AppendOk(out, opcode, request_id, {});
}

}  // namespace seqd::proto
