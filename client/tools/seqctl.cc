// seqctl: command-line client for seqd (HTTP API and binary protocol).
// This file: the usage, the flags, the connection (--http or --tcp) and the
// table of commands; each command family has its own file (seqctl.h).
#include "seqctl.h"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini_http.h"
#include "seqctl_msg.h"
#include "seqd/client.h"
#include "tool_args.h"
#include "tool_flags.h"
#include "tool_version.h"

namespace seqd::tools {
namespace {

constexpr const char* kUsage =
    R"(Usage: seqctl [--http HOST:PORT | --tcp HOST:PORT[,HOST:PORT...]] [OPTION]... COMMAND [ARGS]
  or:  seqctl --help | --version

Talks to a seqd server. By default over HTTP to 127.0.0.1:8080.

Options:
  --http HOST:PORT   the HTTP API (default 127.0.0.1:8080)
  --tcp LIST         the binary protocol, comma-separated endpoints tried in
                     order with failover (for `next`, `block`, `max-ids`,
                     `min-seqs`, `set-min-seqs`, `ping`, `snowflake`,
                     `snowflake-decode` and `msg`)
  --json             print the server's JSON instead of readable output
  --dry-run          openim-import: read the files and seqd, print what it
                     would do, write nothing
  --timeout MS       per-request timeout (default 5000)
  --token SECRET     the token to present (docs/security.md); default: the
                     environment variable SEQD_TOKEN (prefer it: a flag shows
                     in `ps`)
%TLS%  -h, --help         this help
  --version          the version and commit (as seqd --version)

Commands:
  next KEY [COUNT]              COUNT (default 1) IDs of KEY, one per line
                                (over the binary protocol with --tcp)
  ping                          round trip: GET /healthz, or PING with --tcp
  block KEY COUNT               COUNT IDs of KEY with no hole: "FIRST LAST"
  max-ids KEY...                the largest ID handed out of each KEY
  min-seqs KEY...               each KEY's min seq (0 if never set)
  set-min-seqs KEY=VALUE...     set min seqs (durable once it answers)
  snowflake [COUNT]             COUNT (default 1) snowflake IDs, one per line
  snowflake-decode ID           a snowflake ID's time (UTC), worker and sequence
  keys [--after K] [--limit N]  list keys (a page of up to N, after key K)
  key KEY                       one key: its row and its in-memory state
  create KEY STEP [DESCRIPTION] register a key with a step (POST /admin/keys)
  set-step KEY STEP             change a key's step (PUT /admin/keys/KEY/step)
  cluster [KEY]                 cluster mode: the members, the shards each
                                owns and, with KEY, the key's shard and owner
                                (GET /admin/cluster)
  shard status                  store groups: where each shard's rows are, and
                                the move in progress (GET /admin/placement)
  shard move SHARD --to GROUP [--rate ROWS_PER_S]
  shard move SHARD --undo       move a shard's rows to another store group
                                online (or undo the move before its seal);
                                waits for it; run it again after a failure
                                to finish it (docs/cluster.md)
  shard rebalance --to GROUP --count N [--rate ROWS_PER_S]
                                move N shards onto GROUP, one at a time
  openim-import seq|seq-user FILE
                                OpenIM's Mongo `seq` or `seq_user` collection,
                                as mongoexport writes it, into seqd (needs
                                --tcp; idempotent: run it again to finish)
  openim-export seq FILE [PREFIX...]
  openim-export seq-user USERS_FILE FILE
                                the other way: the conversations seqd has
                                (OpenIM's prefixes by default), or the seqs
                                of the users listed (one id per line);
                                docs/openim.md, "Migration"
%MSG%  token new --id ID --scopes S[,S...]
                                a fresh random secret, printed once, and the
                                line to add to seqd's tokens file (which
                                keeps only its SHA-256); talks to no server

Admin commands (keys, key, create, set-step, cluster, shard) always use HTTP.

TLS applies to --http and --tcp alike; e.g.
  seqctl --http seqd.internal:8080 --tls --tls-ca ca.crt next order 3

Exit status: 0 on success, 1 on an error (message on stderr), 2 on a usage error.
)";

std::string Usage() {
  std::string usage = kUsage;
  usage.replace(usage.find("%TLS%"), 5, kTlsFlagsHelp);
  usage.replace(usage.find("%MSG%"), 5, kMsgHelp);
  return usage;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// The flags whose value a command reads later, kept as given; nullptr for
// any other flag.
std::optional<std::string>* KeptFlag(Args& args, const std::string& flag) {
  const std::pair<const char*, std::optional<std::string>*> kept[] = {
      {"--after", &args.after},
      {"--limit", &args.limit},
      {"--from", &args.msg.from},
      {"--to", &args.msg.to},
      {"--user", &args.msg.user},
      {"--client-msg-id", &args.msg.client_msg_id},
      {"--content-type", &args.msg.content_type},
      {"--count", &args.msg.count},
      {"--id", &args.token_id},
      {"--scopes", &args.token_scopes},
      {"--rate", &args.rate},
  };
  for (const auto& [name, field] : kept) {
    if (flag == name) return field;
  }
  return nullptr;
}

Args ParseArgs(int argc, char** argv) {
  Args args;
  if (const char* env = std::getenv("SEQD_TOKEN")) args.token = env;
  FlagReader words(argc, argv);
  while (words.Next()) {
    const std::string& a = words.flag();
    if (a == "-h" || a == "--help") {
      std::cout << Usage();
      std::exit(0);
    } else if (a == "--version") {
      std::cout << VersionLine("seqctl") << "\n";
      std::exit(0);
    } else if (a == "--http") {
      args.http = words.Value();
    } else if (a == "--tcp") {
      args.tcp = SplitComma(words.Value());
      if (args.tcp.empty()) throw UsageError{"--tcp needs at least one HOST:PORT"};
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--dry-run") {
      args.dry_run = true;
    } else if (a == "--undo") {
      args.undo = true;
    } else if (a == "--desc") {
      args.msg.desc = true;
    } else if (a == "--timeout") {
      args.timeout_ms = ParseNumber<int>(words.Value(), "--timeout", 1, 3600 * 1000);
    } else if (a == "--token") {
      args.token = words.Value();
    } else if (std::optional<std::string>* kept = KeptFlag(args, a)) {
      *kept = words.Value();
    } else if (args.tls.Parse(a, [&words] { return words.Value(); })) {
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      throw UsageError{"unknown option " + a};
    } else {
      args.positional.push_back(words.word());
    }
  }
  args.tls.ApplyEnvironment();
  return args;
}

// --- the connection --------------------------------------------------------------

// The binary-protocol client for --tcp.
std::unique_ptr<client::Client> MakeClient(const Args& args, std::chrono::milliseconds timeout) {
  client::ClientOptions options;
  options.endpoints = args.tcp;
  options.call_timeout = timeout;
  options.connect_timeout = timeout;
  // A command reports an unreachable server after a few quick attempts
  // rather than retrying for the library's default call_deadline.
  options.max_attempts = 3;
  options.call_deadline = std::chrono::milliseconds(0);
  options.token = args.token;
  args.tls.ApplyTo(options);
  try {
    return std::make_unique<client::Client>(options);
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
}

Http MakeHttp(const Args& args, std::chrono::milliseconds timeout) {
  Http http;
  if (!client::SplitEndpoint(args.http, http.host, http.port)) {
    throw UsageError{"--http wants HOST:PORT, got '" + args.http + "'"};
  }
  http.timeout = timeout;
  http.token = args.token;
  http.tls = args.tls;
  return http;
}

// --- the commands ----------------------------------------------------------------

// `seqctl msg ...` (seqctl_msg.cc), over --tcp or HTTP.
int RunMsgCommand(const Args& args, std::chrono::milliseconds timeout) {
  MsgArgs msg = args.msg;
  msg.words.assign(args.positional.begin() + 1, args.positional.end());
  msg.json = args.json;
  msg.limit = args.limit;
  if (args.after) throw UsageError{"--after only applies to `keys`"};
  MsgServer server;
  std::unique_ptr<client::Client> client;
  if (!args.tcp.empty()) {
    client = MakeClient(args, timeout);
    server.tcp = client.get();
  } else {
    server.http = [http = MakeHttp(args, timeout)](
                      std::string_view method, const std::string& target, const std::string& body) {
      return http.Call(method, target, body);
    };
  }
  return RunMsg(msg, server);
}

int Run(const Args& args) {
  if (args.positional.empty()) throw UsageError{"no command (try --help)"};
  const std::string& cmd = args.positional[0];
  if ((args.token_id || args.token_scopes) && cmd != "token") {
    throw UsageError{"--id and --scopes only apply to `token new`"};
  }
  if (cmd == "token") return NewToken(args);
  const auto timeout = std::chrono::milliseconds(args.timeout_ms);
  const bool admin =
      cmd == "keys" || cmd == "key" || cmd == "create" || cmd == "set-step" || cmd == "cluster";
  if (cmd == "msg") return RunMsgCommand(args, timeout);
  if (cmd == "shard") {
    // --to and --count name the target group and the shards to move.
    Args shard_args = args;
    shard_args.count = args.msg.count;
    return ShardCommand(shard_args, MakeHttp(args, timeout));
  }
  if (args.dry_run && cmd != "openim-import") {
    throw UsageError{"--dry-run only applies to openim-import"};
  }
  if (cmd == "openim-import" || cmd == "openim-export") {
    if (args.tcp.empty()) throw UsageError{cmd + " needs --tcp HOST:PORT"};
    const std::unique_ptr<client::Client> tcp = MakeClient(args, timeout);
    return OpenImMigrateCommand(args, *tcp, MakeHttp(args, timeout));
  }
  const bool openim =
      cmd == "block" || cmd == "max-ids" || cmd == "min-seqs" || cmd == "set-min-seqs";
  if (args.msg.from || args.msg.to || args.msg.user || args.msg.desc || args.msg.client_msg_id ||
      args.msg.content_type || args.msg.count) {
    throw UsageError{
        "--from, --to, --user, --desc, --client-msg-id, --content-type and --count "
        "only apply to `msg` commands"};
  }
  if ((args.after || args.limit) && cmd != "keys") {
    throw UsageError{"--after and --limit only apply to `keys` and `msg pull`"};
  }

  // The connection is made (and its flags checked) before the command's
  // arguments are.
  if (!args.tcp.empty() && !admin) {
    const std::unique_ptr<client::Client> tcp = MakeClient(args, timeout);
    if (cmd == "next") return NextIds(args, *tcp);
    if (openim) return OpenImCommand(args, tcp.get(), nullptr);
    if (cmd == "snowflake") return Snowflake(args, *tcp);
    if (cmd == "snowflake-decode") return DecodeSnowflake(args, *tcp);
    if (cmd == "ping") return Ping(args, *tcp);
    throw UsageError{"unknown command '" + cmd + "' (try --help)"};
  }
  const Http http = MakeHttp(args, timeout);
  if (cmd == "next") return NextIds(args, http);
  if (openim) return OpenImCommand(args, nullptr, &http);
  if (cmd == "ping") return Ping(args, http);
  if (cmd == "snowflake") return Snowflake(args, http);
  if (cmd == "snowflake-decode") return DecodeSnowflake(args, http);
  if (cmd == "keys") return ListKeys(args, http);
  if (cmd == "cluster") return ShowCluster(args, http);
  if (cmd == "key") return ShowKey(args, http);
  if (cmd == "create") return CreateKey(args, http);
  if (cmd == "set-step") return SetStep(args, http);
  throw UsageError{"unknown command '" + cmd + "' (try --help)"};
}

}  // namespace

std::string Http::Call(std::string_view method, const std::string& target,
                       const std::string& body) const {
  std::string error;
  std::optional<HttpResponse> res =
      HttpCall(host, port, method, target, body, timeout, error, token, tls);
  if (!res) throw Failure{error};
  if (const std::string* field = res->Header("seqd-placement-version")) {
    int64_t version = -1;
    const char* end = field->data() + field->size();
    if (std::from_chars(field->data(), end, version).ptr == end && version > placement_version) {
      placement_version = version;
    }
  }
  if (res->status / 100 != 2) {
    Json j = Json::parse(res->body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object()) {
      throw Failure{j["error"].value("code", "error") + ": " + j["error"].value("message", "") +
                    " (HTTP " + std::to_string(res->status) + ")"};
    }
    throw Failure{"HTTP " + std::to_string(res->status) + " " + res->reason + ": " + res->body};
  }
  return res->body;
}

void Need(const Args& a, size_t min, size_t max, const char* usage) {
  const size_t n = a.positional.size() - 1;
  if (n < min || n > max) throw UsageError{std::string("usage: seqctl ") + usage};
}

}  // namespace seqd::tools

int main(int argc, char** argv) {
  using seqd::tools::Failure;
  using seqd::tools::UsageError;
  try {
    return seqd::tools::Run(seqd::tools::ParseArgs(argc, argv));
  } catch (const UsageError& e) {
    std::cerr << "seqctl: " << e.message << "\n";
    return 2;
  } catch (const Failure& e) {
    std::cerr << "seqctl: " << e.message << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "seqctl: " << e.what() << "\n";
    return 1;
  }
}
