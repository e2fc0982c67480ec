// A whole RESP session: the real RespServer session code (parser,
// DecideRespCommand, INCR runs, replies in order) over a real allocator on
// a memory store, reached on a loopback port. The harness writes the input,
// half-closes, and reads every reply until the server closes; it checks
// what came back against its own reading of the commands.
//
// Inputs that mention AUTH (any case) go to a second server with tokens
// (tests/fuzz/fuzz_tokens.h); the others to an open one.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proto/resp_codec.h"
#include "server/auth/authenticator.h"
#include "server/base/asio_clock.h"
#include "server/base/log.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/resp/resp_commands.h"
#include "server/resp/resp_server.h"
#include "storage/memory/memory_store.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_tokens.h"
#include "tests/fuzz/fuzz_worlds.h"
#include "tests/unit/test_services.h"

namespace seqd::fuzz {

namespace {

// Two RESP servers on loopback, one open and one with the fuzz tokens.
struct RespWorld : AllocatorOnIo {
  RespWorld()
      : AllocatorOnIo(Options()),
        services(store, db, allocator),
        open(io, ServerOptions(), services),
        authed(io, ServerOptions(), ServicesWithAuth(services, auth.get())) {
    FUZZ_CHECK(open.Listen().ok());
    FUZZ_CHECK(authed.Listen().ok());
    thread = std::thread([this] { io.run(); });
  }

  static AllocatorOptions Options() {
    AllocatorOptions o = ShortWaitAllocatorOptions();
    o.max_count = 1000;
    return o;
  }
  static RespServerOptions ServerOptions() {
    RespServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.max_in_flight = 64;
    return o;
  }

  TestServices services;  // key admin, messages, metrics
  RespServer open;
  RespServer authed;
  std::thread thread;
};

RespWorld& World() { return ProcessWorld<RespWorld>(); }

// A loopback connection to `port`, from a new source address of 127/8
// each time: the connections we close first sit in TIME_WAIT for a
// minute, and a million runs from one address would use up its ports.
int Connect(uint16_t port) {
  static uint32_t next = 0;
  const uint32_t n = next++ % 65000 + 1;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(0x7f000000u | (n >> 8) << 8 | (n & 0xff));
  FUZZ_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    // libFuzzer's timer signal may interrupt connect(); the connection then
    // completes on its own: wait for it and read its outcome.
    int error = errno;
    if (error == EINTR) {
      pollfd p{fd, POLLOUT, 0};
      while (::poll(&p, 1, 10'000) < 0 && errno == EINTR) {
      }
      socklen_t len = sizeof error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    }
    if (error != 0) {
      ::dprintf(kReportFd, "connect: %s\n", std::strerror(error));
      FUZZ_CHECK(false);
    }
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// One RESP2 reply from the server: its first byte and, for integers, the
// value.
struct Reply {
  char type = 0;
  std::optional<int64_t> integer;
};

// The line at the front of `in` (without CRLF); nullopt if none.
std::optional<std::string_view> Line(std::string_view& in) {
  const size_t crlf = in.find("\r\n");
  if (crlf == std::string_view::npos) return std::nullopt;
  std::string_view line = in.substr(0, crlf);
  in.remove_prefix(crlf + 2);
  return line;
}

std::optional<int64_t> Integer(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  int64_t v = 0;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size()) return std::nullopt;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return text[0] == '-' ? -v : v;
}

// Decodes one whole reply at the front of `in`; a malformed or partial
// reply fails the run.
Reply DecodeReply(std::string_view& in, int depth = 0) {
  FUZZ_CHECK(depth < 8);
  const auto line = Line(in);
  FUZZ_CHECK(line.has_value() && !line->empty());
  FUZZ_CHECK(line->find('\n') == std::string_view::npos &&
             line->find('\r') == std::string_view::npos);
  Reply r{(*line)[0], std::nullopt};
  const std::string_view rest = line->substr(1);
  switch (r.type) {
    case '+':
    case '-':
      return r;
    case ':':
      r.integer = Integer(rest);
      FUZZ_CHECK(r.integer.has_value());
      return r;
    case '$': {
      const auto len = Integer(rest);
      FUZZ_CHECK(len.has_value() && *len >= -1);
      if (*len == -1) return r;
      FUZZ_CHECK(in.size() >= static_cast<size_t>(*len) + 2);
      FUZZ_CHECK(in.substr(static_cast<size_t>(*len), 2) == "\r\n");
      in.remove_prefix(static_cast<size_t>(*len) + 2);
      return r;
    }
    case '*': {
      const auto n = Integer(rest);
      FUZZ_CHECK(n.has_value() && *n >= -1 && *n <= 1024);
      for (int64_t i = 0; i < *n; ++i) DecodeReply(in, depth + 1);
      return r;
    }
    default:
      FUZZ_CHECK(false);  // not a RESP2 reply
      return r;
  }
}

bool MentionsAuth(std::string_view input) {
  for (size_t i = 0; i + 4 <= input.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(input[i])) == 'a' &&
        std::tolower(static_cast<unsigned char>(input[i + 1])) == 'u' &&
        std::tolower(static_cast<unsigned char>(input[i + 2])) == 't' &&
        std::tolower(static_cast<unsigned char>(input[i + 3])) == 'h') {
      return true;
    }
  }
  return false;
}

// What the harness expects of one command, from the pure decision.
struct Expected {
  RespAction::Kind kind = RespAction::Kind::kReply;
  std::string key;
  int64_t count = 0;
};

}  // namespace

void RespSession(const uint8_t* data, size_t size) {
  RespWorld& world = World();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool with_auth = MentionsAuth(input);

  // The commands as the server will read them, up to the first one after
  // which it reads no more (protocol error, QUIT, HTTP, AUTH failures).
  std::vector<Expected> commands;
  bool exact = true;  // every command gets a reply (nothing closes early)
  {
    const resp::RespLimits limits;
    std::vector<std::string_view> args;
    for (std::string_view rest = input; !rest.empty();) {
      const resp::ParseResult r = resp::ParseCommand(rest, limits, &args);
      if (r.state == resp::ParseState::kNeedMore) break;
      if (r.state == resp::ParseState::kError) {
        commands.push_back({});  // the protocol error reply
        break;
      }
      rest.remove_prefix(r.consumed);
      if (args.empty()) continue;
      const RespAction a = DecideRespCommand(args, RespWorld::Options().max_count);
      if (a.close || a.looks_like_http || a.kind == RespAction::Kind::kAuth) exact = false;
      commands.push_back({a.kind, std::string(a.key), a.count});
      if (a.close || a.looks_like_http) break;
    }
  }

  const int fd = Connect(with_auth ? world.authed.port() : world.open.port());
  const std::string output = Exchange(fd, input);
  ::close(fd);

  // Every byte back is a whole reply; one per command, in order; a key's IDs
  // never repeat.
  std::map<std::string, std::set<int64_t>> ids;
  size_t n = 0;
  for (std::string_view rest = output; !rest.empty(); ++n) {
    const Reply reply = DecodeReply(rest);
    FUZZ_CHECK(n < commands.size());  // only commands get replies
    const Expected& cmd = commands[n];
    if (cmd.kind == RespAction::Kind::kIncr || cmd.kind == RespAction::Kind::kIncrBy) {
      FUZZ_CHECK(reply.type == ':' || reply.type == '-');
      if (reply.type != ':') continue;
      const int64_t count = cmd.kind == RespAction::Kind::kIncr ? 1 : cmd.count;
      FUZZ_CHECK(count >= 1 && count <= RespWorld::Options().max_count);
      FUZZ_CHECK(*reply.integer >= count);
      for (int64_t id = *reply.integer - count + 1; id <= *reply.integer; ++id) {
        FUZZ_CHECK(ids[cmd.key].insert(id).second);
      }
    }
  }
  if (exact) FUZZ_CHECK(n == commands.size());
}

}  // namespace seqd::fuzz
