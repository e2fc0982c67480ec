// The RESP commands (resp_server.h lists them) as pure decisions: a parsed
// command in, what the connection must do out, with no socket and no
// allocator. RespServer's session acts on the decision (INCR runs, INCRBY
// takes, replies in order).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/scopes.h"

namespace seqd {

// The RESP op table: what each command family counts as and needs. The
// session takes op labels and permissions from here and nowhere else.
enum class RespOp : uint8_t {
  kIncr = 0,
  kIncrBy = 1,
  kPing = 2,
  kMaxIds = 3,   // GET, MGET: the largest ID handed out (MAX_IDS)
  kMinSeqs = 4,  // SEQD.MINSEQ, SEQD.SETMINSEQ
  kOther = 5,
};

struct RespOpRow {
  RespOp op;
  std::string_view metric_label;  // the `op` label, one of Metrics::Ops(Interface::kResp)
  // What the connection's token must allow for the command's key; none:
  // any authenticated connection (AUTH, QUIT and HELLO: any).
  std::optional<Permission> permission;
};

// The row of `op`.
const RespOpRow& RespOpFor(RespOp op);

// The `op` label of `op` (docs/metrics.md).
inline std::string_view RespOpName(RespOp op) { return RespOpFor(op).metric_label; }

struct RespAction {
  enum class Kind : uint8_t {
    kIncr,    // take one ID of `key` (joins a run of INCRs of that key)
    kIncrBy,  // take a contiguous block of `count` IDs of `key`
    kReply,   // answer `reply` now (in order)
    kAuth,    // AUTH [user] secret: `key` is the secret, `user` the user name ("" if none)
    kQuery,   // GET/MGET (max IDs), SEQD.MINSEQ, SEQD.SETMINSEQ of `keys` (`query` says which)
  };
  enum class Query : uint8_t { kMaxIds, kGetMinSeqs, kSetMinSeqs };
  Kind kind = Kind::kReply;
  RespOp op = RespOp::kOther;
  std::string_view key;                // kIncr, kIncrBy: a view into the command
  int64_t count = 0;                   // kIncrBy
  std::optional<ErrorCode> code;       // kReply: the metric status; nullopt: ok
  std::string reply;                   // kReply: the encoded reply
  bool ends_run = true;                // false: a pending run of INCRs may go on after it
  bool close = false;                  // QUIT: read no more commands
  std::string_view user;               // kAuth
  Query query = Query::kMaxIds;        // kQuery
  std::vector<std::string_view> keys;  // kQuery: views into the command
  std::vector<int64_t> values;         // kQuery kSetMinSeqs: keys[i]'s min seq
  bool single = false;                 // kQuery: GET (one bulk reply, not an array)
  bool needs_auth = true;              // false for AUTH, PING and QUIT: answered before an AUTH
  // The input is an HTTP request sent to the RESP port (a browser or a
  // cross-protocol attack): close the connection at once, answering nothing,
  // as Redis does.
  bool looks_like_http = false;
};

// Redis's replies for authentication (RESP error prefixes clients know).
inline constexpr std::string_view kNoAuthReply = "-NOAUTH Authentication required.\r\n";
inline constexpr std::string_view kWrongPassReply =
    "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
// "-NOPERM <message>\r\n".
std::string NoPermReply(std::string_view message);

// What `args` (args[0] is the command name, any case) asks for.
// REQUIRES: !args.empty().
RespAction DecideRespCommand(const std::vector<std::string_view>& args, int64_t max_count);

// True if `args` is `INCR key` (name in any case) that DecideRespCommand
// answers with Kind::kIncr of args[1]: the session's fast path.
inline bool IsPlainIncr(const std::vector<std::string_view>& args) {
  if (args.size() != 2) return false;
  const std::string_view name = args[0];
  return name.size() == 4 && (name[0] | 0x20) == 'i' && (name[1] | 0x20) == 'n' &&
         (name[2] | 0x20) == 'c' && (name[3] | 0x20) == 'r' && !args[1].starts_with("HTTP/");
}

// "-ERR <message>\r\n".
std::string EncodedError(std::string_view message);

// The encoded reply for an allocator error: a fixed, client-safe text.
std::string TakeErrorReply(const Error& e);

// The encoded reply when no contiguous block of `count` IDs could be taken.
std::string NotContiguousReply(int64_t count);

}  // namespace seqd
