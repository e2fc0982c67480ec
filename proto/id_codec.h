// The ID ops of the seqd binary protocol beyond NEXT_IDS (docs/protocol.md,
// "ID ops"): a contiguous block of IDs, the largest ID handed out per key,
// and the durable per-key min seqs.
//
//   0x05 NEXT_BLOCK    request `str key, u32 count` [`u8 n, on_behalf_of`]
//                      OK result `i64 first, i64 last`
//   0x06 MAX_IDS       request `u32 n, n × str key`   OK result `u32 n, n × i64`
//   0x07 GET_MIN_SEQS  request `u32 n, n × str key`   OK result `u32 n, n × i64`
//   0x08 SET_MIN_SEQS  request `u32 n, n × (str key, i64 min_seq)`  OK result empty
//   0x09 NEXT_BLOCK_ONCE request `str key, u32 count, u8 m, token`
//                      [`u8 n, on_behalf_of`]   OK result as NEXT_BLOCK's
//
// Big-endian like the rest of the protocol; `str` is `u16 length, bytes`.
// Parsers are strict: a payload that is not exactly the encoding is
// nullopt. List lengths and values are the server's to check (more than
// kMaxWireList items is TOO_LARGE), not the codec's. Pure functions, no I/O;
// shared by the server and the client library.
//
// Thread safety: all functions are reentrant; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/binary_codec.h"

namespace seqd::proto {

inline constexpr Opcode kOpNextBlock = static_cast<Opcode>(0x05);
inline constexpr Opcode kOpMaxIds = static_cast<Opcode>(0x06);
inline constexpr Opcode kOpGetMinSeqs = static_cast<Opcode>(0x07);
inline constexpr Opcode kOpSetMinSeqs = static_cast<Opcode>(0x08);
inline constexpr Opcode kOpNextBlockOnce = static_cast<Opcode>(0x09);
inline constexpr Opcode kOpMaxIdsTimes = static_cast<Opcode>(0x0A);
inline constexpr Opcode kOpUserSeqs = static_cast<Opcode>(0x0B);
inline constexpr Opcode kOpSetUserSeqs = static_cast<Opcode>(0x0C);

// True for 0x05..0x0C.
bool IsIdOpcode(uint8_t opcode);

// --- NEXT_BLOCK (0x05): the payload is NEXT_IDS's --------------------------------
// ParseNextIdsRequest / AppendNextIdsRequest (binary_codec.h) encode it.

// The request payload of NEXT_BLOCK (as NEXT_IDS's).
std::string NextBlockRequestPayload(std::string_view key, uint32_t count,
                                    std::string_view on_behalf_of = {});
// Appends a whole OK response frame: `i64 first, i64 last`.
void AppendOkNextBlock(std::string& out, uint32_t request_id, int64_t first, int64_t last);
// nullopt unless `result` is exactly 16 bytes.
std::optional<IdRangeWire> ParseNextBlockResult(std::string_view result);

// --- NEXT_BLOCK_ONCE (0x09): NEXT_BLOCK with an idempotency token -----------------

struct NextBlockOnceRequest {
  std::string_view key;    // points into the payload
  uint32_t count = 0;
  std::string_view token;  // 1 to 255 bytes (the server checks its own limit)
  std::string_view on_behalf_of;  // as NextIdsRequest's; empty when absent
};
// REQUIRES: key fits a u16 length, token 1..255 bytes, on_behalf_of at
// most kMaxOnBehalfOf bytes.
std::string NextBlockOnceRequestPayload(std::string_view key, uint32_t count,
                                        std::string_view token,
                                        std::string_view on_behalf_of = {});
// nullopt unless `payload` is exactly the encoding (a token of 0 bytes
// does not parse).
std::optional<NextBlockOnceRequest> ParseNextBlockOnceRequest(std::string_view payload);
// Appends a whole OK response frame of `opcode` (NEXT_BLOCK or
// NEXT_BLOCK_ONCE): `i64 first, i64 last`.
void AppendOkBlock(std::string& out, Opcode opcode, uint32_t request_id, int64_t first,
                   int64_t last);

// --- MAX_IDS (0x06), GET_MIN_SEQS (0x07) -----------------------------------------

// `u32 n, n × str key`. REQUIRES: every key fits a u16 length.
std::string KeyListPayload(const std::vector<std::string_view>& keys);
// nullopt unless `payload` is `u32 n, n × str` exactly. The views point
// into the payload.
std::optional<std::vector<std::string_view>> ParseKeyList(std::string_view payload);
// Appends a whole OK response frame of `opcode`: `u32 n, n × i64`.
void AppendOkInt64List(std::string& out, Opcode opcode, uint32_t request_id,
                       const std::vector<int64_t>& values);
// nullopt unless `result` is `u32 n, n × i64` exactly.
std::optional<std::vector<int64_t>> ParseInt64List(std::string_view result);

// --- MAX_IDS_TIMES (0x0A): MAX_IDS's request, each key's time too ----------------

// One key's answer: MAX_IDS's max, and the unix ms of its last allocation
// (-1: the key has no row).
struct MaxIdTime {
  int64_t max_id = 0;
  int64_t time_ms = -1;
};
// Appends a whole OK response frame: `u32 n, n × (i64 max_id, i64 time_ms)`.
// REQUIRES: max_ids.size() == times_ms.size().
void AppendOkMaxIdsTimes(std::string& out, uint32_t request_id, const std::vector<int64_t>& max_ids,
                         const std::vector<int64_t>& times_ms);
// nullopt unless `result` is `u32 n, n × (i64, i64)` exactly.
std::optional<std::vector<MaxIdTime>> ParseMaxIdsTimesResult(std::string_view result);

// --- USER_SEQS (0x0B), SET_USER_SEQS (0x0C): OpenIM's per-user seqs ------------

// `field`: 1 min seq, 2 max seq, 3 read seq (storage's UserSeqField).
struct UserSeqsRequest {
  std::string_view user;  // points into the payload
  uint8_t field = 0;
  std::vector<std::string_view> convs;
};
// `str user, u8 field, u32 n, n × str conv`. REQUIRES: user and every
// conversation fit a u16 length.
std::string UserSeqsPayload(std::string_view user, uint8_t field,
                            const std::vector<std::string_view>& convs);
// nullopt unless `payload` is exactly the encoding with a field of 1..3.
std::optional<UserSeqsRequest> ParseUserSeqsRequest(std::string_view payload);

struct SetUserSeqsRequest {
  std::string_view user;
  uint8_t field = 0;
  bool raise_only = false;
  std::vector<std::pair<std::string_view, int64_t>> values;  // (conversation, seq)
};
// `str user, u8 field, u8 raise_only, u32 n, n × (str conv, i64 seq)`.
std::string SetUserSeqsPayload(std::string_view user, uint8_t field, bool raise_only,
                               const std::vector<std::pair<std::string_view, int64_t>>& values);
// nullopt unless `payload` is exactly the encoding with a field of 1..3
// and raise_only 0 or 1.
std::optional<SetUserSeqsRequest> ParseSetUserSeqsRequest(std::string_view payload);

// --- SET_MIN_SEQS (0x08) -------------------------------------------------------

using KeyValueView = std::pair<std::string_view, int64_t>;
// `u32 n, n × (str key, i64 value)`. REQUIRES: every key fits a u16 length.
std::string KeyValueListPayload(const std::vector<KeyValueView>& items);
// nullopt unless `payload` is `u32 n, n × (str, i64)` exactly.
std::optional<std::vector<KeyValueView>> ParseKeyValueList(std::string_view payload);
// Appends a whole OK response frame of `opcode` with an empty result.
void AppendOkEmpty(std::string& out, Opcode opcode, uint32_t request_id);

}  // namespace seqd::proto
