// The snowflake ops of the seqd binary protocol (docs/protocol.md,
// "Snowflake ops"): time-ordered 64-bit IDs and their decoding.
//
//   0x10 SNOWFLAKE         request `u32 count`  OK result `u32 n, n × i64 id`
//   0x11 SNOWFLAKE_DECODE  request `i64 id`     OK result `i64 time_ms, i64 worker,
//                                                          i64 sequence`
//
// Big-endian like the rest of the protocol. Parsers are strict: a payload
// that is not exactly the encoding (short, or with bytes left over) is
// nullopt. Range checks (count in [1, max], id within the layout) are the
// server's, not the codec's. Pure functions, no I/O, no Asio; shared by the
// server and the client library.
//
// Thread safety: all functions are reentrant; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/binary_codec.h"

namespace seqd::proto {

inline constexpr Opcode kOpSnowflake = static_cast<Opcode>(0x10);
inline constexpr Opcode kOpSnowflakeDecode = static_cast<Opcode>(0x11);

// The most IDs one SNOWFLAKE answer can carry (131,069): the result after
// the header and the status must fit kMaxFrameSize.
inline constexpr size_t kMaxSnowflakeIdsPerFrame = (kMaxFrameSize - kHeaderSize - 2 - 4) / 8;

// True for 0x10 and 0x11 (the rest of 0x10..0x1F is reserved).
bool IsSnowflakeOpcode(uint8_t opcode);

// The decoded fields of one ID (the SNOWFLAKE_DECODE result).
struct SnowflakeFieldsWire {
  int64_t time_ms = 0;  // unix milliseconds
  int64_t worker = 0;
  int64_t sequence = 0;
  bool operator==(const SnowflakeFieldsWire&) const = default;
};

// --- SNOWFLAKE (0x10) ----------------------------------------------------------

// The request payload: `u32 count`.
std::string SnowflakeRequestPayload(uint32_t count);
// nullopt unless `payload` is exactly 4 bytes.
std::optional<uint32_t> ParseSnowflakeRequest(std::string_view payload);
// Appends a whole request frame (flags 0).
void AppendSnowflakeRequest(std::string& out, uint32_t request_id, uint32_t count);
// Appends a whole OK response frame: status 0, `u32 n, n × i64`.
// REQUIRES: n <= kMaxSnowflakeIdsPerFrame.
void AppendOkSnowflake(std::string& out, uint32_t request_id, const int64_t* ids, size_t n);
// nullopt unless `result` (after the status) is `u32 n, n × i64` exactly.
std::optional<std::vector<int64_t>> ParseSnowflakeResult(std::string_view result);

// --- SNOWFLAKE_DECODE (0x11) -----------------------------------------------------

// The request payload: `i64 id`.
std::string SnowflakeDecodeRequestPayload(int64_t id);
// nullopt unless `payload` is exactly 8 bytes.
std::optional<int64_t> ParseSnowflakeDecodeRequest(std::string_view payload);
// Appends a whole request frame (flags 0).
void AppendSnowflakeDecodeRequest(std::string& out, uint32_t request_id, int64_t id);
// Appends a whole OK response frame: status 0, `i64 time_ms, i64 worker, i64 sequence`.
void AppendOkSnowflakeDecode(std::string& out, uint32_t request_id,
                             const SnowflakeFieldsWire& fields);
// nullopt unless `result` (after the status) is exactly 24 bytes.
std::optional<SnowflakeFieldsWire> ParseSnowflakeDecodeResult(std::string_view result);

}  // namespace seqd::proto
