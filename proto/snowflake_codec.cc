#include "proto/snowflake_codec.h"

#include "proto/wire_io.h"

namespace seqd::proto {

namespace {

constexpr size_t kCountBytes = 4;
constexpr size_t kIdBytes = 8;
constexpr size_t kFieldsBytes = 3 * 8;

using wire::Load32;
using wire::Load64;
using wire::Put32;
using wire::Put64;

// Appends an OK response frame whose result is `result`.
void AppendOk(std::string& out, Opcode opcode, uint32_t request_id, std::string_view result) {
  std::string payload;
  payload.reserve(2 + result.size());
  payload.push_back(0);  // u16 status OK
  payload.push_back(0);
  payload.append(result);
  AppendFrame(out, opcode, kFlagResponse, request_id, payload);
}

}  // namespace

bool IsSnowflakeOpcode(uint8_t opcode) {
  return opcode == static_cast<uint8_t>(kOpSnowflake) ||
         opcode == static_cast<uint8_t>(kOpSnowflakeDecode);
}

// --- SNOWFLAKE ---------------------------------------------------------------------

std::string SnowflakeRequestPayload(uint32_t count) {
  std::string payload;
  Put32(payload, count);
  return payload;
}

std::optional<uint32_t> ParseSnowflakeRequest(std::string_view payload) {
  if (payload.size() != kCountBytes) return std::nullopt;
  return Load32(payload.data());
}

void AppendSnowflakeRequest(std::string& out, uint32_t request_id, uint32_t count) {
  AppendFrame(out, kOpSnowflake, 0, request_id, SnowflakeRequestPayload(count));
}

void AppendOkSnowflake(std::string& out, uint32_t request_id, const int64_t* ids, size_t n) {
  std::string result;
  result.reserve(kCountBytes + kIdBytes * n);
  Put32(result, static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) Put64(result, ids[i]);
  AppendOk(out, kOpSnowflake, request_id, result);
}

std::optional<std::vector<int64_t>> ParseSnowflakeResult(std::string_view result) {
  if (result.size() < kCountBytes) return std::nullopt;
  const uint64_t n = Load32(result.data());
  // 64-bit arithmetic: no count the u32 can hold overflows it.
  if (result.size() != kCountBytes + kIdBytes * n) return std::nullopt;
  std::vector<int64_t> ids(static_cast<size_t>(n));
  const char* p = result.data() + kCountBytes;
  for (int64_t& id : ids) {
    id = Load64(p);
    p += kIdBytes;
  }
  return ids;
}

// --- SNOWFLAKE_DECODE ----------------------------------------------------------------

std::string SnowflakeDecodeRequestPayload(int64_t id) {
  std::string payload;
  Put64(payload, id);
  return payload;
}

std::optional<int64_t> ParseSnowflakeDecodeRequest(std::string_view payload) {
  if (payload.size() != kIdBytes) return std::nullopt;
  return Load64(payload.data());
}

void AppendSnowflakeDecodeRequest(std::string& out, uint32_t request_id, int64_t id) {
  AppendFrame(out, kOpSnowflakeDecode, 0, request_id, SnowflakeDecodeRequestPayload(id));
}

void AppendOkSnowflakeDecode(std::string& out, uint32_t request_id,
                             const SnowflakeFieldsWire& fields) {
  std::string result;
  result.reserve(kFieldsBytes);
  Put64(result, fields.time_ms);
  Put64(result, fields.worker);
  Put64(result, fields.sequence);
  AppendOk(out, kOpSnowflakeDecode, request_id, result);
}

std::optional<SnowflakeFieldsWire> ParseSnowflakeDecodeResult(std::string_view result) {
  if (result.size() != kFieldsBytes) return std::nullopt;
  SnowflakeFieldsWire f;
  f.time_ms = Load64(result.data());
  f.worker = Load64(result.data() + 8);
  f.sequence = Load64(result.data() + 16);
  return f;
}

}  // namespace seqd::proto
