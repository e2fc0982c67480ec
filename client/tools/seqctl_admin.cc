// seqctl's admin commands, always over HTTP: keys (a page of the key list),
// key KEY, create KEY STEP [DESCRIPTION], set-step KEY STEP (/admin/keys)
// and cluster [KEY] (/admin/cluster).
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>

#include "seqctl.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {
namespace {

// The answer's JSON with --json, else its "a.b: value" lines.
void PrintBody(const Args& args, const std::string& body) {
  if (args.json) {
    std::cout << body << "\n";
  } else {
    PrintFlat(ParseJson(body));
  }
}

// `seqctl cluster`: members with their shard counts, the shards without a
// live owner, and optionally where one key lives.
// `group_of`: with store groups, the group of a shard ("" unknown).
int PrintCluster(const Json& j, const std::optional<std::string>& key,
                 const std::function<std::string(uint32_t)>& group_of) {
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
    const uint32_t shard = client::ShardOf(*key, static_cast<uint32_t>(shards));
    std::string owner = "-", epoch = "-";
    if (shard < map.size()) {
      const Json& s = map[shard];
      if (!s.value("owner", Json()).is_null()) owner = Scalar(s["owner"]);
      epoch = Scalar(s.value("epoch", Json()));
    }
    std::cout << "key " << *key << ": shard " << shard << ", owner " << owner << ", epoch "
              << epoch;
    if (group_of) std::cout << ", group " << group_of(shard);
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

int ListKeys(const Args& args, const Http& http) {
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

int ShowKey(const Args& args, const Http& http) {
  Need(args, 1, 1, "key KEY");
  PrintBody(args, http.Call("GET", "/admin/keys/" + UrlEncode(args.positional[1])));
  return 0;
}

int CreateKey(const Args& args, const Http& http) {
  Need(args, 2, 3, "create KEY STEP [DESCRIPTION]");
  Json req;
  req["key"] = args.positional[1];
  req["step"] = ParseNumber<int64_t>(args.positional[2], "STEP", 1, INT64_MAX);
  if (args.positional.size() > 3) req["description"] = args.positional[3];
  PrintBody(args, http.Call("POST", "/admin/keys", req.dump()));
  return 0;
}

int SetStep(const Args& args, const Http& http) {
  Need(args, 2, 2, "set-step KEY STEP");
  Json req;
  req["step"] = ParseNumber<int64_t>(args.positional[2], "STEP", 1, INT64_MAX);
  PrintBody(args,
            http.Call("PUT", "/admin/keys/" + UrlEncode(args.positional[1]) + "/step", req.dump()));
  return 0;
}

int ShowCluster(const Args& args, const Http& http) {
  Need(args, 0, 1, "cluster [KEY]");
  const std::string body = http.Call("GET", "/admin/cluster");
  if (args.json) {
    std::cout << body << "\n";
    return 0;
  }
  std::optional<std::string> key;
  if (args.positional.size() > 1) key = args.positional[1];
  std::function<std::string(uint32_t)> group_of;
  if (key && http.placement_version >= 0) {
    // Store groups (the answer carried a placement version): where the
    // key's shard is, as the same instance reads it.
    const Json placement = ParseJson(http.Call("GET", "/admin/placement"));
    group_of = [placement](uint32_t shard) {
      for (const Json& s : placement.value("placed", Json::array())) {
        if (s.value("shard", int64_t{-1}) == shard) return s.value("group", "");
      }
      return placement.value("home", "");
    };
  }
  return PrintCluster(ParseJson(body), key, group_of);
}

}  // namespace seqd::tools
