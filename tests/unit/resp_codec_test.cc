// The RESP2 request parser (whole, split at every byte, pipelined,
// malformed, limits) and the exact bytes of the reply writers.
#include "proto/resp_codec.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace seqd::resp;
using Args = std::vector<std::string>;

namespace {

struct Parsed {
  ParseState state;
  size_t consumed;
  std::string error;
  Args args;
};

Parsed Parse(std::string_view input, const RespLimits& limits = RespLimits{}) {
  std::vector<std::string_view> views{"stale"};  // must be cleared by the parser
  ParseResult r = ParseCommand(input, limits, &views);
  Parsed p{r.state, r.consumed, r.error, {}};
  for (std::string_view v : views) {
    // Every word points into the input.
    CHECK(v.data() >= input.data());
    CHECK(v.data() + v.size() <= input.data() + input.size());
    p.args.emplace_back(v);
  }
  return p;
}

std::string Multibulk(const Args& words) {
  std::string out;
  AppendArrayHeader(out, static_cast<int64_t>(words.size()));
  for (const std::string& w : words) AppendBulk(out, w);
  return out;
}

struct Valid {
  std::string input;
  Args args;
};

std::vector<Valid> ValidForms() {
  return {
      {"*1\r\n$4\r\nPING\r\n", {"PING"}},
      {"*2\r\n$4\r\nINCR\r\n$5\r\nbench\r\n", {"INCR", "bench"}},
      {"*3\r\n$6\r\nincrby\r\n$1\r\nk\r\n$3\r\n100\r\n", {"incrby", "k", "100"}},
      {"*2\r\n$4\r\nPING\r\n$0\r\n\r\n", {"PING", ""}},
      {"*2\r\n$4\r\nPING\r\n$6\r\na\r\nb\r\n\r\n", {"PING", "a\r\nb\r\n"}},  // binary safe
      {"*2\r\n$4\r\nPING\r\n$3\r\n$2\r\r\n", {"PING", "$2\r"}},
      {"*0\r\n", {}},
      {"*01\r\n$004\r\nPING\r\n", {"PING"}},  // leading zeros are digits too
      {"PING\r\n", {"PING"}},
      {"PING\n", {"PING"}},
      {"INCR  bench\t\r\n", {"INCR", "bench"}},
      {"  incrby\tk   7  \r\n", {"incrby", "k", "7"}},
      {"\r\n", {}},
      {"\n", {}},
      {"   \r\n", {}},
      {"$3\r\n", {"$3"}},  // not '*': an inline command, as Redis reads it
  };
}

}  // namespace

TEST_CASE("resp: every valid form parses whole") {
  for (const Valid& v : ValidForms()) {
    INFO(v.input);
    Parsed p = Parse(v.input);
    CHECK(p.state == ParseState::kCommand);
    CHECK(p.consumed == v.input.size());
    CHECK(p.error.empty());
    CHECK(p.args == v.args);
  }
}

TEST_CASE("resp: every valid form split at every byte needs more, then parses") {
  for (const Valid& v : ValidForms()) {
    for (size_t cut = 0; cut < v.input.size(); ++cut) {
      INFO(v.input, " cut at ", cut);
      const std::string prefix = v.input.substr(0, cut);
      Parsed p = Parse(prefix);
      CHECK(p.state == ParseState::kNeedMore);
      CHECK(p.consumed == 0);
      CHECK(p.args.empty());
      // The rest arriving completes it; trailing bytes of a next command do
      // not disturb it.
      Parsed whole = Parse(prefix + v.input.substr(cut) + "*1\r\n$4\r\nPI");
      CHECK(whole.state == ParseState::kCommand);
      CHECK(whole.consumed == v.input.size());
      CHECK(whole.args == v.args);
    }
  }
}

TEST_CASE("resp: pipelined commands back to back, both forms mixed") {
  std::string stream;
  std::vector<Args> expected;
  for (int i = 0; i < 50; ++i) {
    Args words = {"INCR", "key" + std::to_string(i)};
    if (i % 3 == 0) {
      stream += "INCR key" + std::to_string(i) + "\r\n";
    } else {
      stream += Multibulk(words);
    }
    expected.push_back(words);
  }
  std::vector<Args> got;
  std::string_view rest = stream;
  for (;;) {
    Parsed p = Parse(rest);
    if (p.state != ParseState::kCommand) {
      CHECK(p.state == ParseState::kNeedMore);
      break;
    }
    REQUIRE(p.consumed > 0);
    got.push_back(p.args);
    rest.remove_prefix(p.consumed);
  }
  CHECK(rest.empty());
  CHECK(got == expected);
}

TEST_CASE("resp: malformed input is an error with a message") {
  struct Bad {
    std::string input;
    std::string message_part;
  };
  const std::vector<Bad> cases = {
      {"*x\r\n", "invalid multibulk length"},
      {"*\r\n", "invalid multibulk length"},
      {"*-1\r\n", "invalid multibulk length"},
      {"*+1\r\n", "invalid multibulk length"},
      {"*1 \r\n", "invalid multibulk length"},
      {"*1\n", "invalid multibulk length"},  // LF without CR
      {"*1\rx", "invalid multibulk length"},
      {"*17\r\n", "at most 16 arguments"},
      {"*99999999999999999999999999\r\n", "at most 16 arguments"},  // overflow
      {"*1\r\n+PING\r\n", "expected '$', got '+'"},
      {"*1\r\n:1\r\n", "expected '$', got ':'"},
      {"*1\r\nPING\r\n", "expected '$', got 'P'"},
      {"*2\r\n$4\r\nINCR\r\n\x01", "expected '$', got '\\x01'"},
      {"*1\r\n$-1\r\n", "invalid bulk length"},
      {"*1\r\n$x\r\n", "invalid bulk length"},
      {"*1\r\n$\r\n", "invalid bulk length"},
      {"*1\r\n$4\n", "invalid bulk length"},
      {"*1\r\n$513\r\n", "limited to 512 bytes"},
      {"*1\r\n$99999999999999999999999999\r\n", "limited to 512 bytes"},
      {"*1\r\n$4\r\nPINGxx", "expected CRLF after bulk data"},
      {"*1\r\n$4\r\nPING\rx", "expected CRLF after bulk data"},
      {"*1\r\n$4\r\nPING\n\n", "expected CRLF after bulk data"},
      {"*1\r\n$4\r\nPINGG\r\n", "expected CRLF after bulk data"},
      {std::string(4096, 'a'), "too big inline request"},
      {std::string(5000, 'a') + "\r\n", "too big inline request"},
      {"a b c d e f g h i j k l m n o p q\r\n", "too many arguments"},
      {"PING " + std::string(513, 'x') + "\r\n", "inline argument too long"},
  };
  for (const Bad& b : cases) {
    INFO(b.input.substr(0, 40));
    Parsed p = Parse(b.input);
    CHECK(p.state == ParseState::kError);
    CHECK(p.consumed == 0);
    CHECK(p.args.empty());
    CHECK(p.error.find(b.message_part) != std::string::npos);
  }
}

TEST_CASE("resp: oversized lengths are rejected before the data arrives") {
  CHECK(Parse("*17").state == ParseState::kError);
  CHECK(Parse("*99999999999999999999999").state == ParseState::kError);
  CHECK(Parse("*1\r\n$513").state == ParseState::kError);
  CHECK(Parse("*1\r\n$1000000000000000000000000000").state == ParseState::kError);
  // ... but the largest allowed values only need more.
  CHECK(Parse("*16").state == ParseState::kNeedMore);
  CHECK(Parse("*1\r\n$512").state == ParseState::kNeedMore);
  CHECK(Parse("*1\r\n$512\r\n" + std::string(300, 'x')).state == ParseState::kNeedMore);
  CHECK(Parse(std::string(4095, 'a')).state == ParseState::kNeedMore);
}

TEST_CASE("resp: limits are exact") {
  const RespLimits limits{3, 5, 12};
  // max_args
  CHECK(Parse(Multibulk({"a", "b", "c"}), limits).args == Args{"a", "b", "c"});
  CHECK(Parse(Multibulk({"a", "b", "c", "d"}), limits).state == ParseState::kError);
  CHECK(Parse("a b c\r\n", limits).args == Args{"a", "b", "c"});
  CHECK(Parse("a b c d\r\n", limits).state == ParseState::kError);
  // max_bulk_length, both forms
  CHECK(Parse(Multibulk({"12345"}), limits).args == Args{"12345"});
  CHECK(Parse(Multibulk({"123456"}), limits).state == ParseState::kError);
  CHECK(Parse("12345\r\n", limits).args == Args{"12345"});
  CHECK(Parse("123456\r\n", limits).state == ParseState::kError);
  // max_inline_length counts the line ending: 12 bytes fit, 13 do not.
  CHECK(Parse("ab cd 12345\n", limits).args == Args{"ab", "cd", "12345"});
  CHECK(Parse("ab cd 1234\r\n", limits).args == Args{"ab", "cd", "1234"});
  CHECK(Parse("ab cd 12345\r\n", limits).state == ParseState::kError);
  CHECK(Parse("ab cd 1234\r", limits).state == ParseState::kNeedMore);
  CHECK(Parse("ab cd 12345\r", limits).state == ParseState::kError);  // can only grow
  CHECK(Parse("ab cd 12345\r\n", limits).error == "too big inline request");
}

TEST_CASE("resp: writers produce exact bytes and append") {
  std::string out = "x";
  AppendSimpleString(out, "OK");
  CHECK(out == "x+OK\r\n");

  out.clear();
  AppendSimpleString(out, "a\r\nb");
  CHECK(out == "+a  b\r\n");

  out.clear();
  AppendError(out, "unknown command 'x'");
  CHECK(out == "-ERR unknown command 'x'\r\n");
  out.clear();
  AppendError(out, "bad\r\nthing\n");
  CHECK(out == "-ERR bad  thing \r\n");

  out.clear();
  AppendInteger(out, 0);
  AppendInteger(out, -1);
  AppendInteger(out, 1234567);
  AppendInteger(out, std::numeric_limits<int64_t>::max());
  AppendInteger(out, std::numeric_limits<int64_t>::min());
  CHECK(out == ":0\r\n:-1\r\n:1234567\r\n:9223372036854775807\r\n:-9223372036854775808\r\n");

  out.clear();
  AppendBulk(out, "abc");
  AppendBulk(out, "");
  AppendBulk(out, std::string_view("a\r\n\0", 4));
  CHECK(out == std::string("$3\r\nabc\r\n$0\r\n\r\n$4\r\na\r\n\0\r\n", 25));

  out.clear();
  AppendNullBulk(out);
  AppendArrayHeader(out, 0);
  AppendArrayHeader(out, 3);
  CHECK(out == "$-1\r\n*0\r\n*3\r\n");
}

TEST_CASE("resp: writer output parses back as a command") {
  const Args words = {"INCRBY", std::string(512, 'k'), "10000", "", "x\r\ny"};
  const std::string wire = Multibulk(words);
  Parsed p = Parse(wire);
  CHECK(p.state == ParseState::kCommand);
  CHECK(p.consumed == wire.size());
  CHECK(p.args == words);
}
