// What seqctl's command files share: the parsed command line, the HTTP
// connection, how answers print, and each command family's entry points.
// seqctl.cc parses the flags and sends each command to its family:
//   seqctl_ids.cc    next, snowflake, snowflake-decode (--tcp or HTTP)
//   seqctl_ping.cc   ping (--tcp or HTTP)
//   seqctl_admin.cc  keys, key, create, set-step, cluster (HTTP only)
//   seqctl_token.cc  token new (no server)
//   seqctl_msg.cc    msg ... (its own MsgArgs, seqctl_msg.h)
// A command returns the exit status; it throws UsageError or Failure
// (tool_args.h) for seqctl's main to print.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mini_http.h"
#include "seqctl_msg.h"

namespace seqd::client {
class Client;
}

namespace seqd::tools {

using Json = nlohmann::ordered_json;

// The command line. positional[0] is the command, the rest its arguments.
struct Args {
  std::string http = "127.0.0.1:8080";
  std::vector<std::string> tcp;
  bool json = false;
  bool dry_run = false;  // openim-import: read and print, write nothing
  int timeout_ms = 5000;
  std::optional<std::string> after;
  std::optional<std::string> limit;                   // keys, msg pull
  std::string token;                                  // --token, else SEQD_TOKEN
  TlsFlags tls;                                       // --tls, --tls-*
  std::optional<std::string> token_id, token_scopes;  // token new
  MsgArgs msg;                                        // msg: its flags
  bool undo = false;                                  // shard move --undo
  std::optional<std::string> rate, count;             // shard move/rebalance
  std::vector<std::string> positional;
};

// The HTTP API of one server (--http).
struct Http {
  std::string host, port;
  std::chrono::milliseconds timeout;
  std::string token;
  TlsFlags tls;
  // Store groups (docs/cluster.md): the highest Seqd-Placement-Version an
  // answer carried so far; -1 while none did (a server without them). Each
  // Call raises it.
  mutable int64_t placement_version = -1;

  // The body of a 2xx answer; anything else throws Failure.
  std::string Call(std::string_view method, const std::string& target,
                   const std::string& body = "") const;
};

// Throws UsageError("usage: seqctl <usage>") unless the command has
// between `min` and `max` arguments.
void Need(const Args& a, size_t min, size_t max, const char* usage);

// --- how answers print (seqctl_print.cc) ---------------------------------------

// The server's answer as JSON; Failure if it is not JSON.
Json ParseJson(const std::string& body);
// A JSON scalar as text: strings unquoted, null as "-".
std::string Scalar(const Json& v);
// "a.b.c: value" lines for a JSON object.
void PrintFlat(const Json& j, const std::string& prefix = "");
// Rows in columns two spaces apart, each as wide as its widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows);

// --- the command families ----------------------------------------------------

// seqctl_ids.cc: next KEY [COUNT], snowflake [COUNT], snowflake-decode ID.
// block, max-ids, min-seqs, set-min-seqs (seqctl_openim.cc): over `tcp`
// if given, else `http`.
int OpenImCommand(const Args& args, client::Client* tcp, const Http* http);
// openim-import and openim-export (seqctl_openim_migrate.cc): OpenIM's
// Mongo seq collections into seqd and back, over the binary protocol
// (`http` lists the keys for an export).
int OpenImMigrateCommand(const Args& args, client::Client& tcp, const Http& http);
int NextIds(const Args& args, client::Client& tcp);
int NextIds(const Args& args, const Http& http);
int Snowflake(const Args& args, client::Client& tcp);
int Snowflake(const Args& args, const Http& http);
int DecodeSnowflake(const Args& args, client::Client& tcp);
int DecodeSnowflake(const Args& args, const Http& http);

// seqctl_ping.cc: ping.
int Ping(const Args& args, client::Client& tcp);
int Ping(const Args& args, const Http& http);

// seqctl_admin.cc: keys, key KEY, create KEY STEP [DESCRIPTION],
// set-step KEY STEP, cluster [KEY].
int ListKeys(const Args& args, const Http& http);
int ShowKey(const Args& args, const Http& http);
int CreateKey(const Args& args, const Http& http);
int SetStep(const Args& args, const Http& http);
int ShowCluster(const Args& args, const Http& http);

// seqctl_shard.cc: shard status, shard move SHARD --to GROUP [--undo]
// [--rate N], shard rebalance --to GROUP --count N [--rate N].
int ShardCommand(const Args& args, const Http& http);

// seqctl_token.cc: token new --id ID --scopes S[,S...].
int NewToken(const Args& args);

}  // namespace seqd::tools
