// seqd::tools RESP2 helpers (bench/seqbench/resp_wire.h), what seqbench --resp
// sends and reads: commands encoded as arrays of bulk strings, each reply
// type read back, replies cut at every byte, and malformed input refused.
#include "resp_wire.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using seqd::tools::AppendRespCommand;
using seqd::tools::ParseRespReply;
using seqd::tools::RespParse;
using seqd::tools::RespReply;

namespace {

struct Parsed {
  RespParse state;
  RespReply reply;
  size_t consumed = 0;
  std::string error;
};

Parsed Parse(std::string_view in) {
  Parsed p;
  p.state = ParseRespReply(in, p.reply, p.consumed, p.error);
  return p;
}

}  // namespace

TEST_CASE("commands are arrays of bulk strings") {
  std::string out;
  AppendRespCommand(out, {"INCR", "order"});
  CHECK(out == "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n");
  AppendRespCommand(out, {"AUTH", ""});
  CHECK(out == "*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n*2\r\n$4\r\nAUTH\r\n$0\r\n\r\n");
}

TEST_CASE("each reply type") {
  auto p = Parse(":12345\r\n:1\r\n");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.type == ':');
  CHECK(p.reply.integer == 12345);
  CHECK(p.consumed == 8);

  p = Parse("-ERR count 50000 is over max_count 10000\r\n");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.type == '-');
  CHECK(p.reply.text == "ERR count 50000 is over max_count 10000");

  p = Parse("+OK\r\n");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.type == '+');
  CHECK(p.reply.text == "OK");

  p = Parse("$3\r\n1\r2\r\nrest");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.text == "1\r2");
  CHECK(p.consumed == 9);

  p = Parse("$-1\r\n");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.integer == -1);

  p = Parse("*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n:9\r\n");
  REQUIRE(p.state == RespParse::kReply);
  CHECK(p.reply.type == '*');
  CHECK(p.reply.integer == 3);
  CHECK(p.consumed == std::string_view("*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n").size());
}

TEST_CASE("a reply cut anywhere needs more") {
  const std::string whole = "*2\r\n$5\r\nhello\r\n:-7\r\n";
  for (size_t n = 0; n < whole.size(); ++n) {
    INFO("cut at " << n);
    CHECK(Parse(std::string_view(whole).substr(0, n)).state == RespParse::kNeedMore);
  }
  CHECK(Parse(whole).state == RespParse::kReply);
}

TEST_CASE("malformed replies are errors") {
  for (std::string_view bad :
       {"?x\r\n", ":12a\r\n", ":\r\n", "$-2\r\n", "$2\r\nabc\r\n", "*x\r\n", "*1\r\n!\r\n"}) {
    INFO(bad);
    const auto p = Parse(bad);
    CHECK(p.state == RespParse::kError);
    CHECK(!p.error.empty());
  }
  CHECK(Parse(std::string(70000, 'a')).state == RespParse::kError);  // no line end
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  CHECK(Parse(deep).state == RespParse::kError);
}
