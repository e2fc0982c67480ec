// RESP2 (the Redis serialization protocol, version 2): a request parser that
// works on partial input, and reply writers. Pure functions, no I/O, no Asio.
//
// Requests come in two forms:
//   * arrays of bulk strings, `*N\r\n$len\r\narg\r\n...` (redis-cli,
//     redis-benchmark and every client library send these);
//   * inline commands, one line of space-separated words ending in "\r\n"
//     or "\n" (what a telnet user types). Quotes are not interpreted.
// Limits are arguments so the server decides them; the parser reports a
// limit breach as soon as the offending length is known, so a connection
// never buffers more than about max_args * (max_bulk_length + 20) bytes of
// one command.
//
// Thread safety: all functions are reentrant; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seqd::resp {

struct RespLimits {
  size_t max_args = 16;             // words per command, command name included
  size_t max_bulk_length = 512;     // bytes per word (either form)
  size_t max_inline_length = 4096;  // bytes per inline line, line ending included
};

enum class ParseState {
  kCommand,   // `args` holds one command; `consumed` bytes of input are used
  kNeedMore,  // the input holds no complete command yet; nothing is consumed
  kError,     // malformed input; `error` says why. The stream cannot resync.
};

struct ParseResult {
  ParseState state = ParseState::kNeedMore;
  size_t consumed = 0;  // kCommand only
  std::string error;    // kError only, e.g. "invalid bulk length" (no "Protocol error: ")
};

// Parses the first command in `input`, which may hold a partial command, one
// or many. On kCommand `*args` holds the words, pointing into `input` (valid
// as long as the caller's buffer is); an empty line or `*0\r\n` gives a
// command with no words, which a server skips without a reply (as Redis
// does). On other states `*args` is cleared.
ParseResult ParseCommand(std::string_view input, const RespLimits& limits,
                         std::vector<std::string_view>* args);

// --- reply writers: each appends one whole reply to `out` --------------------

// "+text\r\n". CR and LF in `text` become spaces.
void AppendSimpleString(std::string& out, std::string_view text);
// "-ERR message\r\n". CR and LF in `message` become spaces.
void AppendError(std::string& out, std::string_view message);
// ":value\r\n"
void AppendInteger(std::string& out, int64_t value);
// "$len\r\ndata\r\n" (binary safe)
void AppendBulk(std::string& out, std::string_view data);
// "$-1\r\n"
void AppendNullBulk(std::string& out);
// "*n\r\n"; the caller appends the n elements.
void AppendArrayHeader(std::string& out, int64_t n);

}  // namespace seqd::resp
