// RESP2 (the Redis protocol) for seqbench --resp: commands as arrays of bulk
// strings, and the replies read back one at a time from a byte stream.
// Pure functions over strings; thread-safe.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace seqd::tools {

// Appends `args` as one RESP command: *N\r\n then $len\r\narg\r\n each.
inline void AppendRespCommand(std::string& out, std::initializer_list<std::string_view> args) {
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (std::string_view a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out.append(a.data(), a.size());
    out += "\r\n";
  }
}

enum class RespParse { kNeedMore, kReply, kError };

// One reply. `type` is its first byte: '+' simple string, '-' error, ':'
// integer, '$' bulk string, '*' array. `text`: a simple string's or an
// error's line, a bulk string's body (views into the input). `integer`: an
// integer reply's value, a bulk string's or an array's length (-1: nil).
struct RespReply {
  char type = 0;
  std::string_view text;
  int64_t integer = 0;
};

namespace detail {

inline bool RespInteger(std::string_view s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// Parses the reply at `in`'s start, `depth` arrays deep.
inline RespParse ParseRespAt(std::string_view in, RespReply& out, size_t& consumed,
                             std::string& error, int depth) {
  constexpr size_t kMaxLine = 64 * 1024;
  if (in.empty()) return RespParse::kNeedMore;
  const size_t eol = in.find("\r\n");
  if (eol == std::string_view::npos) {
    if (in.size() > kMaxLine) {
      error = "RESP line too long";
      return RespParse::kError;
    }
    return RespParse::kNeedMore;
  }
  out = RespReply{in[0], in.substr(1, eol - 1), 0};
  consumed = eol + 2;
  switch (out.type) {
    case '+':
    case '-':
      return RespParse::kReply;
    case ':':
      if (!RespInteger(out.text, out.integer)) break;
      out.text = {};
      return RespParse::kReply;
    case '$': {
      if (!RespInteger(out.text, out.integer) || out.integer < -1) break;
      out.text = {};
      if (out.integer == -1) return RespParse::kReply;
      const auto len = static_cast<size_t>(out.integer);
      if (in.size() - consumed < len + 2) return RespParse::kNeedMore;
      if (in.substr(consumed + len, 2) != "\r\n") break;
      out.text = in.substr(consumed, len);
      consumed += len + 2;
      return RespParse::kReply;
    }
    case '*': {
      if (!RespInteger(out.text, out.integer) || out.integer < -1 || depth >= 8) break;
      out.text = {};
      for (int64_t i = 0; i < out.integer; ++i) {
        RespReply element;
        size_t used = 0;
        const RespParse r = ParseRespAt(in.substr(consumed), element, used, error, depth + 1);
        if (r != RespParse::kReply) return r;
        consumed += used;
      }
      return RespParse::kReply;
    }
    default:
      break;
  }
  error = "malformed RESP reply";
  return RespParse::kError;
}

}  // namespace detail

// The first reply in `in`: kReply with `out` and `consumed` (its bytes),
// kNeedMore if `in` ends before it does, kError (with `error`) if it is not
// RESP2. An array's elements are checked and skipped, not returned.
inline RespParse ParseRespReply(std::string_view in, RespReply& out, size_t& consumed,
                                std::string& error) {
  return detail::ParseRespAt(in, out, consumed, error, 0);
}

}  // namespace seqd::tools
