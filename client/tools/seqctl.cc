// seqctl: command-line client for seqd (HTTP API and binary protocol).
//
// Over 400 lines: one short function per subcommand plus the shared
// argument handling; a table of commands read top to bottom.
#include <charconv>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/scopes.h"
#include "common/token_digest.h"
#include "mini_http.h"
#include "seqctl_msg.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace {

using Json = nlohmann::ordered_json;
using seqd::tools::Failure;
using seqd::tools::HttpCall;
using seqd::tools::HttpResponse;
using seqd::tools::ParseNumber;
using seqd::tools::UrlEncode;
using seqd::tools::UsageError;
using seqd::tools::UtcTime;

constexpr const char* kUsage =
    R"(usage: seqctl [--http HOST:PORT | --tcp HOST:PORT[,HOST:PORT...]] [--json]
              [--timeout MS] [--token SECRET] [--tls [--tls-ca FILE] ...] COMMAND [ARGS]

Talks to a seqd server. By default over HTTP to 127.0.0.1:8080.

Options:
  --http HOST:PORT   the HTTP API (default 127.0.0.1:8080)
  --tcp LIST         the binary protocol, comma-separated endpoints tried in
                     order with failover (for `next`, `ping`, `snowflake`,
                     `snowflake-decode` and `msg`)
  --json             print the server's JSON instead of readable output
  --timeout MS       per-request timeout (default 5000)
  --token SECRET     the token to present (docs/security.md); default: the
                     environment variable SEQD_TOKEN (prefer it: a flag shows
                     in `ps`)
%TLS%  -h, --help         this help

Commands:
  next KEY [COUNT]              COUNT (default 1) IDs of KEY, one per line
                                (over the binary protocol with --tcp)
  ping                          round trip: GET /healthz, or PING with --tcp
  snowflake [COUNT]             COUNT (default 1) snowflake IDs, one per line
  snowflake-decode ID           a snowflake ID's time (UTC), worker and sequence
  keys [--after K] [--limit N]  list keys (a page of up to N, after key K)
  key KEY                       one key: its row and its in-memory state
  create KEY STEP [DESCRIPTION] register a key with a step (POST /admin/keys)
  set-step KEY STEP             change a key's step (PUT /admin/keys/KEY/step)
  cluster [KEY]                 cluster mode: the members, the shards each
                                owns and, with KEY, the key's shard and owner
                                (GET /admin/cluster)
%MSG%  token new --id ID --scopes S[,S...]
                                a fresh random secret, printed once, and the
                                line to add to seqd's tokens file (which
                                keeps only its SHA-256); talks to no server

Admin commands (keys, key, create, set-step, cluster) always use HTTP.

TLS applies to --http and --tcp alike; e.g.
  seqctl --http seqd.internal:8080 --tls --tls-ca ca.crt next order 3

Exit status: 0 on success, 1 on an error (message on stderr), 2 on a usage error.
)";

std::string Usage() {
  std::string usage = kUsage;
  usage.replace(usage.find("%TLS%"), 5, seqd::tools::kTlsFlagsHelp);
  usage.replace(usage.find("%MSG%"), 5, seqd::tools::kMsgHelp);
  return usage;
}

struct Args {
  std::string http = "127.0.0.1:8080";
  std::vector<std::string> tcp;
  bool json = false;
  int timeout_ms = 5000;
  std::optional<std::string> after;
  std::optional<std::string> limit;                   // keys, msg pull
  std::string token;                                  // --token, else SEQD_TOKEN
  seqd::tools::TlsFlags tls;                          // --tls, --tls-*
  std::optional<std::string> token_id, token_scopes;  // token new
  seqd::tools::MsgArgs msg;                           // msg: its flags
  std::vector<std::string> positional;
};

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

Args ParseArgs(int argc, char** argv) {
  Args args;
  if (const char* env = std::getenv("SEQD_TOKEN")) args.token = env;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    auto need = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << Usage();
      std::exit(0);
    } else if (a == "--http") {
      args.http = need();
    } else if (a == "--tcp") {
      args.tcp = SplitComma(need());
      if (args.tcp.empty()) throw UsageError{"--tcp needs at least one HOST:PORT"};
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--timeout") {
      args.timeout_ms = ParseNumber<int>(need(), "--timeout", 1, 3600 * 1000);
    } else if (a == "--after") {
      args.after = need();
    } else if (a == "--limit") {
      args.limit = need();
    } else if (a == "--from") {
      args.msg.from = need();
    } else if (a == "--to") {
      args.msg.to = need();
    } else if (a == "--user") {
      args.msg.user = need();
    } else if (a == "--desc") {
      args.msg.desc = true;
    } else if (a == "--client-msg-id") {
      args.msg.client_msg_id = need();
    } else if (a == "--content-type") {
      args.msg.content_type = need();
    } else if (a == "--count") {
      args.msg.count = need();
    } else if (a == "--token") {
      args.token = need();
    } else if (a == "--id") {
      args.token_id = need();
    } else if (a == "--scopes") {
      args.token_scopes = need();
    } else if (args.tls.Parse(a, need)) {
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      throw UsageError{"unknown option " + a};
    } else {
      args.positional.push_back(argv[i]);
    }
  }
  args.tls.ApplyEnvironment();
  return args;
}

// --- HTTP ----------------------------------------------------------------------

struct Http {
  std::string host, port;
  std::chrono::milliseconds timeout;
  std::string token;
  seqd::tools::TlsFlags tls;

  // The body of a 2xx answer; anything else throws Failure.
  std::string Call(std::string_view method, const std::string& target,
                   const std::string& body = "") const {
    std::string error;
    std::optional<HttpResponse> res =
        HttpCall(host, port, method, target, body, timeout, error, token, tls);
    if (!res) throw Failure{error};
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
};

Json ParseJson(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) throw Failure{"the server's answer is not JSON: " + body};
  return j;
}

std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

// "a.b.c: value" lines for a JSON object.
void PrintFlat(const Json& j, const std::string& prefix = "") {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      PrintFlat(*it, name);
    } else {
      std::cout << name << ": " << Scalar(*it) << "\n";
    }
  }
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

void PrintIds(const Json& j) {
  if (j.contains("id")) {
    std::cout << j["id"].get<int64_t>() << "\n";
    return;
  }
  std::string out;
  for (const Json& r : j.at("ranges")) {
    const int64_t first = r.at("first").get<int64_t>(), last = r.at("last").get<int64_t>();
    for (int64_t id = first;; ++id) {
      out += std::to_string(id);
      out += '\n';
      if (id == last) break;
    }
  }
  std::cout << out;
}

// A decoded snowflake ID, in the shape of GET /snowflake/decode/{id}.
Json DecodedJson(int64_t id, int64_t time_ms, int64_t worker, int64_t sequence) {
  Json j;
  j["id"] = std::to_string(id);
  j["time_ms"] = time_ms;
  j["time"] = UtcTime(time_ms);
  j["worker"] = worker;
  j["sequence"] = sequence;
  return j;
}

// Snowflake IDs in the shape of GET /snowflake: strings; "id" only for one.
Json SnowflakeJson(const std::vector<int64_t>& ids) {
  Json j;
  if (ids.size() == 1) j["id"] = std::to_string(ids.front());
  j["ids"] = Json::array();
  for (int64_t id : ids) j["ids"].push_back(std::to_string(id));
  return j;
}

void PrintLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  std::cout << out;
}

// `seqctl cluster`: members with their shard counts, the shards without a
// live owner, and optionally where one key lives.
int PrintCluster(const Json& j, const std::optional<std::string>& key) {
  const std::string me = Scalar(j.value("instance", Json("?")));
  const int64_t shards = j.value("shards", int64_t{0});
  std::cout << "instance " << me << " (answering), " << shards << " shards, lease "
            << Scalar(j.value("lease_ms", Json("?"))) << " ms"
            << (j.value("ready", false) ? "" : ", NOT READY (cluster tables not read yet)") << "\n";
  std::map<std::string, bool> live;
  std::vector<std::vector<std::string>> rows{{"INSTANCE", "ADDRESS", "STATE", "SHARDS"}};
  for (const Json& m : j.value("members", Json::array())) {
    const std::string id = Scalar(m.value("instance", Json("")));
    live[id] = m.value("live", false);
    rows.push_back({id + (id == me ? " *" : ""), Scalar(m.value("advertise", Json(""))),
                    live[id] ? "live" : "gone", Scalar(m.value("shards_owned", Json(0)))});
  }
  PrintTable(rows);
  const Json map = j.value("shard_map", Json::array());
  int64_t unowned = 0;
  for (const Json& s : map) {
    const Json owner = s.value("owner", Json());
    if (owner.is_null() || !live[owner.get<std::string>()]) ++unowned;
  }
  std::cout << unowned << " shards without a live owner\n";
  if (key && shards > 0) {
    const uint32_t shard = seqd::client::ShardOf(*key, static_cast<uint32_t>(shards));
    std::string owner = "-", epoch = "-";
    if (shard < map.size()) {
      const Json& s = map[shard];
      if (!s.value("owner", Json()).is_null()) owner = Scalar(s["owner"]);
      epoch = Scalar(s.value("epoch", Json()));
    }
    std::cout << "key " << *key << ": shard " << shard << ", owner " << owner << ", epoch " << epoch
              << "\n";
  }
  return 0;
}

// --- commands ------------------------------------------------------------------

void Need(const Args& a, size_t min, size_t max, const char* usage) {
  const size_t n = a.positional.size() - 1;
  if (n < min || n > max) throw UsageError{std::string("usage: seqctl ") + usage};
}

// token new --id ID --scopes S,...: a secret and its tokens-file line.
int NewToken(const Args& args) {
  Need(args, 1, 1, "token new --id ID --scopes S[,S...]");
  if (args.positional[1] != "new") throw UsageError{"usage: seqctl token new --id ID --scopes S"};
  if (!args.token_id || !args.token_scopes) {
    throw UsageError{"token new needs --id ID and --scopes S[,S...]"};
  }
  // The same checks as the server's tokens file.
  if (!seqd::ValidTokenId(*args.token_id)) {
    throw UsageError{"--id must be 1-64 of A-Z a-z 0-9 _ . -"};
  }
  if (auto scopes = seqd::ParseScopes(*args.token_scopes); !scopes) {
    throw UsageError{"--scopes: " + scopes.error().message};
  }
  const std::string secret = seqd::NewTokenSecret();
  const std::string line =
      *args.token_id + " " + seqd::DigestHex(seqd::Sha256(secret)) + " " + *args.token_scopes;
  if (args.json) {
    std::cout << Json{{"id", *args.token_id}, {"secret", secret}, {"line", line}}.dump() << "\n";
  } else {
    std::cout << "secret (shown once; give it to the client, e.g. SEQD_TOKEN):\n  " << secret
              << "\nline for the tokens file (then SIGHUP seqd):\n  " << line << "\n";
  }
  return 0;
}

// The binary-protocol client for --tcp.
std::unique_ptr<seqd::client::Client> MakeClient(const Args& args,
                                                 std::chrono::milliseconds timeout) {
  seqd::client::ClientOptions options;
  options.endpoints = args.tcp;
  options.call_timeout = timeout;
  options.connect_timeout = timeout;
  options.token = args.token;
  args.tls.ApplyTo(options);
  try {
    return std::make_unique<seqd::client::Client>(options);
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
}

Http MakeHttp(const Args& args, std::chrono::milliseconds timeout) {
  Http http;
  if (!seqd::client::SplitEndpoint(args.http, http.host, http.port)) {
    throw UsageError{"--http wants HOST:PORT, got '" + args.http + "'"};
  }
  http.timeout = timeout;
  http.token = args.token;
  http.tls = args.tls;
  return http;
}

// `seqctl msg ...` (seqctl_msg.cc), over --tcp or HTTP.
int RunMsg(const Args& args, std::chrono::milliseconds timeout) {
  seqd::tools::MsgArgs msg = args.msg;
  msg.words.assign(args.positional.begin() + 1, args.positional.end());
  msg.json = args.json;
  msg.limit = args.limit;
  if (args.after) throw UsageError{"--after only applies to `keys`"};
  seqd::tools::MsgServer server;
  std::unique_ptr<seqd::client::Client> client;
  if (!args.tcp.empty()) {
    client = MakeClient(args, timeout);
    server.tcp = client.get();
  } else {
    server.http = [http = MakeHttp(args, timeout)](
                      std::string_view method, const std::string& target, const std::string& body) {
      return http.Call(method, target, body);
    };
  }
  return seqd::tools::RunMsg(msg, server);
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
  if (cmd == "msg") return RunMsg(args, timeout);
  if (args.msg.from || args.msg.to || args.msg.user || args.msg.desc || args.msg.client_msg_id ||
      args.msg.content_type || args.msg.count) {
    throw UsageError{
        "--from, --to, --user, --desc, --client-msg-id, --content-type and --count "
        "only apply to `msg` commands"};
  }
  if ((args.after || args.limit) && cmd != "keys") {
    throw UsageError{"--after and --limit only apply to `keys` and `msg pull`"};
  }

  if (!args.tcp.empty() && !admin) {
    std::unique_ptr<seqd::client::Client> client = MakeClient(args, timeout);
    if (cmd == "next") {
      Need(args, 1, 2, "next KEY [COUNT]");
      const std::string& key = args.positional[1];
      const uint32_t count =
          args.positional.size() > 2
              ? ParseNumber<uint32_t>(args.positional[2], "COUNT", 1, 0xFFFFFFFFu)
              : 1;
      seqd::client::ClientResult<seqd::client::IdBatch> r = client->NextIds(key, count);
      if (!r) throw Failure{r.ToString()};
      if (args.json) {
        Json j;
        j["key"] = key;
        j["count"] = r->count();
        j["ranges"] = Json::array();
        for (const seqd::client::IdRange& range : r->ranges) {
          j["ranges"].push_back({{"first", range.first}, {"last", range.last}});
        }
        std::cout << j.dump() << "\n";
      } else {
        std::string out;
        for (int64_t id : r->ids()) out += std::to_string(id) + "\n";
        std::cout << out;
      }
      return 0;
    }
    if (cmd == "snowflake") {
      Need(args, 0, 1, "snowflake [COUNT]");
      const uint32_t count =
          args.positional.size() > 1
              ? ParseNumber<uint32_t>(args.positional[1], "COUNT", 1, 0xFFFFFFFFu)
              : 1;
      seqd::client::ClientResult<std::vector<int64_t>> r = client->NextSnowflake(count);
      if (!r) throw Failure{r.ToString()};
      if (args.json) {
        std::cout << SnowflakeJson(*r).dump() << "\n";
      } else {
        std::vector<std::string> lines;
        for (int64_t id : *r) lines.push_back(std::to_string(id));
        PrintLines(lines);
      }
      return 0;
    }
    if (cmd == "snowflake-decode") {
      Need(args, 1, 1, "snowflake-decode ID");
      const int64_t id = ParseNumber<int64_t>(args.positional[1], "ID", 0, INT64_MAX);
      seqd::client::ClientResult<seqd::client::DecodedSnowflake> r = client->DecodeSnowflake(id);
      if (!r) throw Failure{r.ToString()};
      const Json j = DecodedJson(id, r->time_ms, r->worker, r->sequence);
      if (args.json) {
        std::cout << j.dump() << "\n";
      } else {
        PrintFlat(j);
      }
      return 0;
    }
    if (cmd == "ping") {
      Need(args, 0, 0, "ping");
      seqd::client::ClientResult<std::chrono::microseconds> r = client->Ping();
      if (!r) throw Failure{r.ToString()};
      if (args.json) {
        std::cout << Json{{"rtt_us", r->count()}}.dump() << "\n";
      } else {
        std::cout << "pong in " << r->count() << " us\n";
      }
      return 0;
    }
    throw UsageError{"unknown command '" + cmd + "' (try --help)"};
  }

  const Http http = MakeHttp(args, timeout);

  if (cmd == "next") {
    Need(args, 1, 2, "next KEY [COUNT]");
    std::string target = "/seq/" + UrlEncode(args.positional[1]);
    if (args.positional.size() > 2) {
      target += "?count=" +
                std::to_string(ParseNumber<uint32_t>(args.positional[2], "COUNT", 1, 0xFFFFFFFFu));
    }
    const std::string body = http.Call("GET", target);
    if (args.json) {
      std::cout << body << "\n";
    } else {
      PrintIds(ParseJson(body));
    }
    return 0;
  }
  if (cmd == "ping") {
    Need(args, 0, 0, "ping");
    const auto start = std::chrono::steady_clock::now();
    const std::string body = http.Call("GET", "/healthz");
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (args.json) {
      std::cout << body << "\n";
    } else {
      Json j = ParseJson(body);
      std::cout << Scalar(j.value("status", Json("?"))) << " in " << us << " us (version "
                << Scalar(j.value("version", Json("?"))) << ", up "
                << Scalar(j.value("uptime_s", Json("?"))) << " s)\n";
    }
    return 0;
  }
  if (cmd == "snowflake") {
    Need(args, 0, 1, "snowflake [COUNT]");
    std::string target = "/snowflake";
    if (args.positional.size() > 1) {
      target += "?count=" +
                std::to_string(ParseNumber<uint32_t>(args.positional[1], "COUNT", 1, 0xFFFFFFFFu));
    }
    const std::string body = http.Call("GET", target);
    if (args.json) {
      std::cout << body << "\n";
    } else {
      const Json j = ParseJson(body);  // outlives the loop over its "ids"
      std::vector<std::string> lines;
      for (const Json& id : j.at("ids")) lines.push_back(Scalar(id));
      PrintLines(lines);
    }
    return 0;
  }
  if (cmd == "snowflake-decode") {
    Need(args, 1, 1, "snowflake-decode ID");
    const int64_t id = ParseNumber<int64_t>(args.positional[1], "ID", 0, INT64_MAX);
    const std::string body = http.Call("GET", "/snowflake/decode/" + std::to_string(id));
    if (args.json) {
      std::cout << body << "\n";
    } else {
      PrintFlat(ParseJson(body));
    }
    return 0;
  }
  if (cmd == "keys") {
    Need(args, 0, 0, "keys [--after K] [--limit N]");
    std::string target = "/admin/keys";
    char sep = '?';
    if (args.after) {
      target += sep + std::string("after=") + UrlEncode(*args.after);
      sep = '&';
    }
    if (args.limit) target += sep + std::string("limit=") + UrlEncode(*args.limit);
    const std::string body = http.Call("GET", target);
    if (args.json) {
      std::cout << body << "\n";
      return 0;
    }
    Json j = ParseJson(body);
    std::vector<std::vector<std::string>> rows{
        {"KEY", "STEP", "MAX_ID", "CACHED", "REMAINING", "DESCRIPTION"}};
    for (const Json& k : j.value("keys", Json::array())) {
      std::string cached = "no", remaining = "-";
      if (k.contains("cache") && k["cache"].is_object()) {
        const Json& c = k["cache"];
        cached = "yes";
        int64_t rem = 0;
        for (const char* buf : {"current", "next"}) {
          if (c.contains(buf) && c[buf].is_object()) rem += c[buf].value("remaining", int64_t{0});
        }
        remaining = std::to_string(rem);
      }
      rows.push_back({Scalar(k.value("key", Json())), Scalar(k.value("step", Json())),
                      Scalar(k.value("max_id", Json())), cached, remaining,
                      Scalar(k.value("description", Json("")))});
    }
    PrintTable(rows);
    if (j.contains("next_after") && !j["next_after"].is_null()) {
      std::cout << "(more: seqctl keys --after " << Scalar(j["next_after"]) << ")\n";
    }
    return 0;
  }
  if (cmd == "cluster") {
    Need(args, 0, 1, "cluster [KEY]");
    const std::string body = http.Call("GET", "/admin/cluster");
    if (args.json) {
      std::cout << body << "\n";
      return 0;
    }
    return PrintCluster(ParseJson(body), args.positional.size() > 1
                                             ? std::optional<std::string>(args.positional[1])
                                             : std::nullopt);
  }
  if (cmd == "key") {
    Need(args, 1, 1, "key KEY");
    const std::string body = http.Call("GET", "/admin/keys/" + UrlEncode(args.positional[1]));
    if (args.json) {
      std::cout << body << "\n";
    } else {
      PrintFlat(ParseJson(body));
    }
    return 0;
  }
  if (cmd == "create") {
    Need(args, 2, 3, "create KEY STEP [DESCRIPTION]");
    Json req;
    req["key"] = args.positional[1];
    req["step"] = ParseNumber<int64_t>(args.positional[2], "STEP", 1, INT64_MAX);
    if (args.positional.size() > 3) req["description"] = args.positional[3];
    const std::string body = http.Call("POST", "/admin/keys", req.dump());
    if (args.json) {
      std::cout << body << "\n";
    } else {
      PrintFlat(ParseJson(body));
    }
    return 0;
  }
  if (cmd == "set-step") {
    Need(args, 2, 2, "set-step KEY STEP");
    Json req;
    req["step"] = ParseNumber<int64_t>(args.positional[2], "STEP", 1, INT64_MAX);
    const std::string body =
        http.Call("PUT", "/admin/keys/" + UrlEncode(args.positional[1]) + "/step", req.dump());
    if (args.json) {
      std::cout << body << "\n";
    } else {
      PrintFlat(ParseJson(body));
    }
    return 0;
  }
  throw UsageError{"unknown command '" + cmd + "' (try --help)"};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(ParseArgs(argc, argv));
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
