// seqctl's issue-30 commands: block KEY COUNT, max-ids KEY..., min-seqs
// KEY... and set-min-seqs KEY=VALUE..., over the binary protocol (--tcp:
// NEXT_BLOCK, MAX_IDS, GET_MIN_SEQS, SET_MIN_SEQS) or HTTP (/seq with
// contiguous=true, /max_ids, /min_seqs). Both ways print the same:
// "FIRST LAST" or "KEY VALUE" lines, or with --json the HTTP API's JSON.
#include <charconv>
#include <cstdint>
#include <iostream>

#include "mini_http.h"
#include "seqctl.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {
namespace {

constexpr int64_t kMaxCount = 0xFFFFFFFF;

std::vector<std::string> Keys(const Args& args) {
  return {args.positional.begin() + 1, args.positional.end()};
}

// KEY=VALUE arguments.
std::vector<std::pair<std::string, int64_t>> Pairs(const Args& args) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 1; i < args.positional.size(); ++i) {
    const std::string& a = args.positional[i];
    const size_t eq = a.rfind('=');
    int64_t v = 0;
    if (eq == std::string::npos ||
        std::from_chars(a.data() + eq + 1, a.data() + a.size(), v).ptr != a.data() + a.size()) {
      throw UsageError{"set-min-seqs takes KEY=VALUE arguments, not '" + a + "'"};
    }
    out.emplace_back(a.substr(0, eq), v);
  }
  return out;
}

// {"max_ids": {...}} or {"min_seqs": {...}}, printed or as "KEY VALUE" lines.
void PrintMap(const Args& args, const char* field, const std::vector<std::string>& keys,
              const std::vector<int64_t>& values) {
  Json map = Json::object();
  std::string out;
  for (size_t i = 0; i < keys.size() && i < values.size(); ++i) {
    map[keys[i]] = values[i];
    out += keys[i] + " " + std::to_string(values[i]) + "\n";
  }
  if (args.json) {
    Json j;
    j[field] = std::move(map);
    std::cout << j.dump() << "\n";
  } else {
    std::cout << out;
  }
}

std::string KeyQuery(const std::vector<std::string>& keys) {
  std::string q;
  for (const std::string& k : keys) q += (q.empty() ? "?key=" : "&key=") + UrlEncode(k);
  return q;
}

void PrintHttpMap(const Args& args, const char* field, const std::string& body) {
  if (args.json) {
    std::cout << body << "\n";
    return;
  }
  const Json j = ParseJson(body);
  std::string out;
  for (const auto& [k, v] : j.at(field).items())
    out += k + " " + std::to_string(v.get<int64_t>()) + "\n";
  std::cout << out;
}

// block KEY COUNT: one block with no hole (NEXT_BLOCK, or GET /seq/KEY
// with contiguous=true).
int Block(const Args& args, client::Client* tcp, const Http* http) {
  Need(args, 2, 2, "block KEY COUNT");
  const std::string& key = args.positional[1];
  const auto count = ParseNumber<int64_t>(args.positional[2], "COUNT", 1, kMaxCount);
  int64_t first = 0, last = 0;
  if (tcp) {
    client::ClientResult<client::IdRange> r = tcp->NextBlock(key, static_cast<uint32_t>(count));
    if (!r) throw Failure{r.ToString()};
    first = r->first;
    last = r->last;
  } else {
    const std::string body = http->Call(
        "GET", "/seq/" + UrlEncode(key) + "?count=" + std::to_string(count) + "&contiguous=true");
    if (args.json) {
      std::cout << body << "\n";
      return 0;
    }
    const Json j = ParseJson(body);
    first = j.at("first").get<int64_t>();
    last = j.at("last").get<int64_t>();
  }
  if (args.json) {
    std::cout << Json{{"key", key}, {"first", first}, {"last", last}}.dump() << "\n";
  } else {
    std::cout << first << " " << last << "\n";
  }
  return 0;
}

// max-ids KEY... and min-seqs KEY...: a value per key.
int KeyValues(const Args& args, client::Client* tcp, const Http* http) {
  const std::string& cmd = args.positional[0];
  Need(args, 1, 1000, cmd == "max-ids" ? "max-ids KEY..." : "min-seqs KEY...");
  const char* field = cmd == "max-ids" ? "max_ids" : "min_seqs";
  const std::vector<std::string> keys = Keys(args);
  if (!tcp) {
    PrintHttpMap(args, field, http->Call("GET", "/" + std::string(field) + KeyQuery(keys)));
    return 0;
  }
  client::ClientResult<std::vector<int64_t>> r =
      cmd == "max-ids" ? tcp->MaxIds(keys) : tcp->GetMinSeqs(keys);
  if (!r) throw Failure{r.ToString()};
  PrintMap(args, field, keys, *r);
  return 0;
}

// set-min-seqs KEY=VALUE...
int SetMinSeqs(const Args& args, client::Client* tcp, const Http* http) {
  Need(args, 1, 1000, "set-min-seqs KEY=VALUE...");
  const std::vector<std::pair<std::string, int64_t>> pairs = Pairs(args);
  if (!tcp) {
    Json j;
    j["min_seqs"] = Json::object();
    for (const auto& [k, v] : pairs) j["min_seqs"][k] = v;
    PrintHttpMap(args, "min_seqs", http->Call("PUT", "/min_seqs", j.dump()));
    return 0;
  }
  client::ClientResult<bool> r = tcp->SetMinSeqs(pairs);
  if (!r) throw Failure{r.ToString()};
  std::vector<std::string> keys;
  std::vector<int64_t> values;
  for (const auto& [k, v] : pairs) {
    keys.push_back(k);
    values.push_back(v);
  }
  PrintMap(args, "min_seqs", keys, values);
  return 0;
}

}  // namespace

int OpenImCommand(const Args& args, client::Client* tcp, const Http* http) {
  const std::string& cmd = args.positional[0];
  if (cmd == "block") return Block(args, tcp, http);
  if (cmd == "max-ids" || cmd == "min-seqs") return KeyValues(args, tcp, http);
  return SetMinSeqs(args, tcp, http);  // set-min-seqs
}

}  // namespace seqd::tools
