#include "server/resp/resp_commands.h"

#include <array>
#include <charconv>
#include <limits>

#include "common/request_checks.h"
#include "proto/resp_codec.h"
#include "server/service/wire_errors.h"

namespace seqd {
namespace {

constexpr size_t kMaxEchoedName = 64;  // of an unknown command, in its error

// True if `word` equals `lower` (lower-case letters only) ignoring case.
bool IsCommand(std::string_view word, std::string_view lower) {
  if (word.size() != lower.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if ((word[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

RespAction Reply(RespOp op, std::optional<ErrorCode> code, std::string reply) {
  RespAction a;
  a.kind = RespAction::Kind::kReply;
  a.op = op;
  a.code = code;
  a.reply = std::move(reply);
  return a;
}

// Take IDs of `key`: one (INCR, joining a run) or a block of `count`.
RespAction Take(RespAction::Kind kind, std::string_view key, int64_t count) {
  RespAction a;
  a.kind = kind;
  a.op = kind == RespAction::Kind::kIncr ? RespOp::kIncr : RespOp::kIncrBy;
  a.key = key;
  a.count = count;
  a.ends_run = kind != RespAction::Kind::kIncr;
  return a;
}

RespAction Invalid(RespOp op, std::string reply) {
  return Reply(op, ErrorCode::kInvalidArgument, std::move(reply));
}

// GET, MGET, SEQD.MINSEQ, SEQD.SETMINSEQ: a query over the keys.
RespAction QueryOf(RespAction::Query q) {
  RespAction a;
  a.kind = RespAction::Kind::kQuery;
  a.op = q == RespAction::Query::kMaxIds ? RespOp::kMaxIds : RespOp::kMinSeqs;
  a.query = q;
  return a;
}

std::string WrongArity(std::string_view command) {
  return EncodedError("wrong number of arguments for '" + std::string(command) + "' command");
}

// Name/value pairs for the parameters redis-benchmark reads at start (it
// warns unless both come back); every other parameter is unknown here.
std::string ConfigGet(const std::vector<std::string_view>& args) {
  std::string pairs;
  int64_t n = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    if (IsCommand(args[i], "save")) {
      resp::AppendBulk(pairs, "save");
      resp::AppendBulk(pairs, "");
    } else if (IsCommand(args[i], "appendonly")) {
      resp::AppendBulk(pairs, "appendonly");
      resp::AppendBulk(pairs, "no");
    } else {
      continue;
    }
    n += 2;
  }
  std::string out;
  resp::AppendArrayHeader(out, n);
  return out + pairs;
}

}  // namespace

const RespOpRow& RespOpFor(RespOp op) {
  static constexpr std::array<RespOpRow, 6> kRows = {{
      {RespOp::kIncr, "incr", Permission::kIds},
      {RespOp::kIncrBy, "incrby", Permission::kIds},
      {RespOp::kPing, "ping", std::nullopt},
      {RespOp::kMaxIds, "max_ids", Permission::kIds},
      {RespOp::kMinSeqs, "min_seqs", Permission::kIds},
      {RespOp::kOther, "other", std::nullopt},
  }};
  static_assert(static_cast<size_t>(RespOp::kOther) + 1 == kRows.size());
  return kRows[static_cast<size_t>(op)];
}

std::string EncodedError(std::string_view message) {
  std::string out;
  resp::AppendError(out, message);
  return out;
}

std::string NoPermReply(std::string_view message) {
  std::string out = "-NOPERM ";
  for (char c : message) out.push_back(c == '\r' || c == '\n' ? ' ' : c);
  return out + "\r\n";
}

std::string TakeErrorReply(const Error& e) { return EncodedError(RespErrorText(e)); }

std::string NotContiguousReply(int64_t count) {
  return EncodedError("could not take a contiguous block of " + std::to_string(count) +
                      " IDs; retry or use a smaller count");
}

RespAction DecideRespCommand(const std::vector<std::string_view>& args, int64_t max_count) {
  const std::string_view name = args[0];
  const size_t argc = args.size();
  // "POST / HTTP/1.1", "GET / HTTP/1.1" and "Host: ..." as inline commands.
  if (IsCommand(name, "post") || IsCommand(name, "host:") ||
      (argc >= 2 && args[argc - 1].starts_with("HTTP/"))) {
    RespAction a = Reply(RespOp::kOther, ErrorCode::kInvalidArgument, "");
    a.looks_like_http = true;
    a.close = true;
    a.needs_auth = false;
    return a;
  }
  if (IsCommand(name, "incr")) {
    // A bad INCR ends the run like any other reply: its slot sits between
    // the run's, which must stay contiguous.
    if (argc != 2) return Invalid(RespOp::kIncr, WrongArity("incr"));
    return Take(RespAction::Kind::kIncr, args[1], 1);
  }
  if (IsCommand(name, "incrby")) {
    if (argc != 3) return Invalid(RespOp::kIncrBy, WrongArity("incrby"));
    // Redis's own wording for a value that is not an integer >= 1 (or not
    // a 64-bit one); a count over seqd's own limit names that limit
    // (CheckCount decides the range).
    const int64_t n = ParseCountText(args[2]);
    if (!CheckCount(n, max_count)) {
      if (n > max_count && n < std::numeric_limits<int64_t>::max()) {
        return Invalid(RespOp::kIncrBy,
                       EncodedError("count " + std::to_string(n) + " is over max_count " +
                                    std::to_string(max_count)));
      }
      return Invalid(RespOp::kIncrBy, EncodedError("value is not an integer or out of range"));
    }
    return Take(RespAction::Kind::kIncrBy, args[1], n);
  }
  if (IsCommand(name, "get") || IsCommand(name, "mget") || IsCommand(name, "seqd.minseq")) {
    const bool get = IsCommand(name, "get");
    const bool max = get || IsCommand(name, "mget");
    const RespOp op = max ? RespOp::kMaxIds : RespOp::kMinSeqs;
    if (get ? argc != 2 : argc < 2) {
      return Invalid(op, WrongArity(get ? "get" : max ? "mget" : "seqd.minseq"));
    }
    RespAction a = QueryOf(max ? RespAction::Query::kMaxIds : RespAction::Query::kGetMinSeqs);
    a.single = get;
    a.keys.assign(args.begin() + 1, args.end());
    return a;
  }
  if (IsCommand(name, "seqd.setminseq")) {
    if (argc < 3 || (argc - 1) % 2 != 0) {
      return Invalid(RespOp::kMinSeqs, WrongArity("seqd.setminseq"));
    }
    RespAction a = QueryOf(RespAction::Query::kSetMinSeqs);
    for (size_t i = 1; i + 1 < argc; i += 2) {
      int64_t v = 0;
      const std::string_view text = args[i + 1];
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size()) {
        return Invalid(RespOp::kMinSeqs, EncodedError("value is not an integer or out of range"));
      }
      a.keys.push_back(args[i]);
      a.values.push_back(v);
    }
    return a;
  }
  if (IsCommand(name, "auth")) {
    if (argc != 2 && argc != 3) return Invalid(RespOp::kOther, WrongArity("auth"));
    RespAction a;
    a.kind = RespAction::Kind::kAuth;
    a.op = RespOp::kOther;
    a.key = args[argc - 1];
    if (argc == 3) a.user = args[1];
    a.needs_auth = false;
    return a;
  }
  if (IsCommand(name, "ping")) {
    if (argc == 1) {
      RespAction a = Reply(RespOp::kPing, std::nullopt, "+PONG\r\n");
      a.needs_auth = false;
      return a;
    }
    if (argc > 2) return Invalid(RespOp::kPing, WrongArity("ping"));
    std::string out;
    resp::AppendBulk(out, args[1]);
    return Reply(RespOp::kPing, std::nullopt, std::move(out));
  }
  if (IsCommand(name, "quit")) {
    RespAction a = Reply(RespOp::kOther, std::nullopt, "+OK\r\n");
    a.close = true;
    a.needs_auth = false;
    return a;
  }
  if (IsCommand(name, "command")) return Reply(RespOp::kOther, std::nullopt, "*0\r\n");
  if (IsCommand(name, "config")) {
    if (argc < 2) return Invalid(RespOp::kOther, WrongArity("config"));
    if (!IsCommand(args[1], "get")) {
      return Invalid(RespOp::kOther,
                     EncodedError("unsupported CONFIG subcommand; only CONFIG GET is known"));
    }
    if (argc < 3) return Invalid(RespOp::kOther, WrongArity("config|get"));
    return Reply(RespOp::kOther, std::nullopt, ConfigGet(args));
  }
  std::string shown(name.substr(0, kMaxEchoedName));
  return Invalid(RespOp::kOther, EncodedError("unknown command '" + shown + "'"));
}

}  // namespace seqd
