// seqctl's `msg` commands: the message store from the command line, over
// HTTP or, with --tcp, the binary protocol (the client library).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seqd::client {
class Client;
}

namespace seqd::tools {

// The `msg` command line, after the word "msg".
struct MsgArgs {
  std::vector<std::string> words;  // SUBCOMMAND ARGS...
  bool json = false;               // print JSON (one object per line for `subscribe`)
  std::optional<std::string> from, to, limit, user, client_msg_id, content_type, count;
  bool desc = false;
};

// Where the commands go: `tcp` when --tcp was given, else `http`, which
// returns a 2xx answer's body and throws Failure for anything else.
struct MsgServer {
  client::Client* tcp = nullptr;
  std::function<std::string(std::string_view method, const std::string& target,
                            const std::string& body)>
      http;
};

// The help lines of the `msg` commands, for seqctl's usage.
extern const char* const kMsgHelp;

// Runs one `msg` command; returns the exit status. Throws UsageError and
// Failure (tool_args.h).
int RunMsg(const MsgArgs& args, const MsgServer& server);

}  // namespace seqd::tools
