#include "proto/resp_codec.h"

#include <charconv>
#include <cstring>
#include <limits>

namespace seqd::resp {

namespace {

enum class Length { kOk, kNeedMore, kMalformed, kTooBig };

// Reads "<digits>\r\n" at input[*pos]; on kOk stores the number and moves
// *pos past the CRLF. A number above `max` is kTooBig as soon as its digits
// say so (overflow included), before the line ends.
Length ReadLength(std::string_view input, size_t* pos, size_t max, size_t* value) {
  size_t v = 0;
  size_t i = *pos;
  for (; i < input.size(); ++i) {
    const char c = input[i];
    if (c < '0' || c > '9') break;
    const size_t d = static_cast<size_t>(c - '0');
    if (v > (std::numeric_limits<size_t>::max() - d) / 10) return Length::kTooBig;
    v = v * 10 + d;
    if (v > max) return Length::kTooBig;
  }
  if (i == input.size()) return Length::kNeedMore;
  if (i == *pos || input[i] != '\r') return Length::kMalformed;  // no digits, sign, junk
  if (i + 1 == input.size()) return Length::kNeedMore;
  if (input[i + 1] != '\n') return Length::kMalformed;
  *pos = i + 2;
  *value = v;
  return Length::kOk;
}

ParseResult NeedMore(std::vector<std::string_view>* args) {
  args->clear();
  return ParseResult{};
}

ParseResult Fail(std::vector<std::string_view>* args, std::string message) {
  args->clear();
  return ParseResult{ParseState::kError, 0, std::move(message)};
}

std::string Printable(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string(1, c);
  static constexpr char kHex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return std::string{'\\', 'x', kHex[u >> 4], kHex[u & 15]};
}

ParseResult ParseMultibulk(std::string_view input, const RespLimits& limits,
                           std::vector<std::string_view>* args) {
  size_t pos = 1;  // past '*'
  size_t n = 0;
  switch (ReadLength(input, &pos, limits.max_args, &n)) {
    case Length::kOk:
      break;
    case Length::kNeedMore:
      return NeedMore(args);
    case Length::kMalformed:
      return Fail(args, "invalid multibulk length");
    case Length::kTooBig:
      return Fail(args, "invalid multibulk length: at most " + std::to_string(limits.max_args) +
                            " arguments are allowed");
  }
  for (size_t k = 0; k < n; ++k) {
    if (pos == input.size()) return NeedMore(args);
    if (input[pos] != '$') return Fail(args, "expected '$', got '" + Printable(input[pos]) + "'");
    ++pos;
    size_t len = 0;
    switch (ReadLength(input, &pos, limits.max_bulk_length, &len)) {
      case Length::kOk:
        break;
      case Length::kNeedMore:
        return NeedMore(args);
      case Length::kMalformed:
        return Fail(args, "invalid bulk length");
      case Length::kTooBig:
        return Fail(args, "invalid bulk length: arguments are limited to " +
                              std::to_string(limits.max_bulk_length) + " bytes");
    }
    const size_t avail = input.size() - pos;
    if (avail > len && input[pos + len] != '\r') return Fail(args, "expected CRLF after bulk data");
    if (avail > len + 1 && input[pos + len + 1] != '\n') {
      return Fail(args, "expected CRLF after bulk data");
    }
    if (avail < len + 2) return NeedMore(args);
    args->push_back(input.substr(pos, len));
    pos += len + 2;
  }
  return ParseResult{ParseState::kCommand, pos, {}};
}

ParseResult ParseInline(std::string_view input, const RespLimits& limits,
                        std::vector<std::string_view>* args) {
  const size_t scan = std::min(input.size(), limits.max_inline_length);
  const void* nl = scan == 0 ? nullptr : std::memchr(input.data(), '\n', scan);
  if (nl == nullptr) {
    if (input.size() >= limits.max_inline_length) return Fail(args, "too big inline request");
    return NeedMore(args);
  }
  const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - input.data());
  std::string_view line = input.substr(0, end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (args->size() == limits.max_args) {
      return Fail(args, "too many arguments in inline request (at most " +
                            std::to_string(limits.max_args) + ")");
    }
    if (j - i > limits.max_bulk_length) {
      return Fail(args, "inline argument too long (at most " +
                            std::to_string(limits.max_bulk_length) + " bytes)");
    }
    args->push_back(line.substr(i, j - i));
    i = j;
  }
  return ParseResult{ParseState::kCommand, end + 1, {}};
}

void AppendSanitized(std::string& out, std::string_view text) {
  const size_t at = out.size();
  out.append(text);
  for (size_t i = at; i < out.size(); ++i) {
    if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
  }
}

// `tag` followed by the decimal `value` and CRLF.
void AppendTagged(std::string& out, char tag, int64_t value) {
  char buf[24];
  buf[0] = tag;
  char* end = std::to_chars(buf + 1, buf + sizeof(buf) - 2, value).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

ParseResult ParseCommand(std::string_view input, const RespLimits& limits,
                         std::vector<std::string_view>* args) {
  args->clear();
  if (input.empty()) return ParseResult{};
  if (input[0] == '*') return ParseMultibulk(input, limits, args);
  return ParseInline(input, limits, args);
}

void AppendSimpleString(std::string& out, std::string_view text) {
  out.push_back('+');
  AppendSanitized(out, text);
  out.append("\r\n", 2);
}

void AppendError(std::string& out, std::string_view message) {
  out.append("-ERR ", 5);
  AppendSanitized(out, message);
  out.append("\r\n", 2);
}

void AppendInteger(std::string& out, int64_t value) { AppendTagged(out, ':', value); }

void AppendBulk(std::string& out, std::string_view data) {
  AppendTagged(out, '$', static_cast<int64_t>(data.size()));
  out.append(data);
  out.append("\r\n", 2);
}

void AppendNullBulk(std::string& out) { out.append("$-1\r\n", 5); }

void AppendArrayHeader(std::string& out, int64_t n) { AppendTagged(out, '*', n); }

}  // namespace seqd::resp
