// The RESP commands as pure decisions (no socket, no allocator).
#include "server/resp/resp_commands.h"

#include <doctest/doctest.h>

#include <string_view>
#include <vector>

namespace seqd {

TEST_CASE("resp commands: INCR, INCRBY and the replies decided without a connection") {
  using Args = std::vector<std::string_view>;
  RespAction a = DecideRespCommand(Args{"InCr", "k"}, 100);
  CHECK(a.kind == RespAction::Kind::kIncr);
  CHECK(a.key == "k");
  CHECK_FALSE(a.ends_run);

  a = DecideRespCommand(Args{"incrby", "k", "7"}, 100);
  CHECK(a.kind == RespAction::Kind::kIncrBy);
  CHECK(a.count == 7);
  CHECK(a.ends_run);
  for (std::string_view bad : {"0", "-1", "x", "", "99999999999999999999"}) {
    a = DecideRespCommand(Args{"incrby", "k", bad}, 100);
    CHECK(a.kind == RespAction::Kind::kReply);
    CHECK(a.code == ErrorCode::kInvalidArgument);
    CHECK(a.reply == "-ERR value is not an integer or out of range\r\n");
  }
  // Over seqd's own limit: the answer names the limit.
  a = DecideRespCommand(Args{"incrby", "k", "5000"}, 1000);
  CHECK(a.kind == RespAction::Kind::kReply);
  CHECK(a.code == ErrorCode::kInvalidArgument);
  CHECK(a.reply == "-ERR count 5000 is over max_count 1000\r\n");
  CHECK(DecideRespCommand(Args{"incrby", "k", "1000"}, 1000).kind == RespAction::Kind::kIncrBy);

  a = DecideRespCommand(Args{"incr"}, 100);
  CHECK(a.kind == RespAction::Kind::kReply);
  CHECK(a.op == RespOp::kIncr);
  CHECK(a.ends_run);  // its reply goes between the run's slots: the run must end
  CHECK(a.reply == "-ERR wrong number of arguments for 'incr' command\r\n");

  CHECK(DecideRespCommand(Args{"PING"}, 100).reply == "+PONG\r\n");
  CHECK(DecideRespCommand(Args{"ping", "hi"}, 100).reply == "$2\r\nhi\r\n");
  a = DecideRespCommand(Args{"quit"}, 100);
  CHECK(a.close);
  CHECK(a.reply == "+OK\r\n");
  CHECK(DecideRespCommand(Args{"config", "get", "save"}, 100).reply ==
        "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  a = DecideRespCommand(Args{"FLUSHALL"}, 100);
  CHECK(a.code == ErrorCode::kInvalidArgument);
  CHECK(a.reply == "-ERR unknown command 'FLUSHALL'\r\n");
}

TEST_CASE("resp commands: the session's INCR fast path decides as DecideRespCommand") {
  using Args = std::vector<std::string_view>;
  const std::vector<Args> cases = {
      {"INCR", "k"},
      {"incr", "k"},
      {"iNcR", "bench"},
      {"incr", ""},
      {"incr", "HTTP/1.1"},
      {"incr", "http/x"},
      {"incr"},
      {"incr", "a", "b"},
      {"incrby", "k", "1"},
      {"inc", "k"},
      {"incrx", "k"},
      {"incq", "k"},
      {"INCR\0", "k"},
      {"\x49NCR", "k"},
      {"\x69ncr", "k"},
      {"GET", "k"},
      {"POST", "/"},
      {"Host:", "x"},
      {"i\x0e\x03r", "k"},
      {"incr", "HTTP/"},
  };
  for (const Args& args : cases) {
    CAPTURE(args.size());
    CAPTURE(args[0]);
    const RespAction a = DecideRespCommand(args, 100);
    const bool decided_incr = a.kind == RespAction::Kind::kIncr && !a.looks_like_http;
    CHECK(IsPlainIncr(args) == decided_incr);
    if (IsPlainIncr(args)) {
      CHECK(a.key == args[1]);
      CHECK(a.op == RespOp::kIncr);
      CHECK(a.needs_auth);
      CHECK_FALSE(a.ends_run);
    }
  }
}

TEST_CASE("resp commands: allocator errors become fixed client-safe texts") {
  CHECK(TakeErrorReply(MakeError(ErrorCode::kStoreUnavailable, "mysql: host db1 down")) ==
        "-ERR store unavailable: no IDs could be reserved in time, retry later\r\n");
  CHECK(TakeErrorReply(MakeError(ErrorCode::kInternal, "secret")) == "-ERR internal error\r\n");
  CHECK(TakeErrorReply(MakeError(ErrorCode::kUnknownKey, "unknown key 'k'")) ==
        "-ERR unknown key 'k'\r\n");
}

}  // namespace seqd
