// seqctl's ID commands: next KEY [COUNT], snowflake [COUNT] and
// snowflake-decode ID, over the binary protocol (--tcp, the client library)
// or HTTP. Both ways print the same: the IDs one per line, or with --json
// the HTTP API's JSON.
#include <cstdint>
#include <iostream>
#include <optional>

#include "seqctl.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {
namespace {

void PrintLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  std::cout << out;
}

// The IDs of GET /seq/KEY's answer, one per line.
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

// The COUNT the command line gave at positional[at], or nullopt.
std::optional<uint32_t> CountArg(const Args& args, size_t at) {
  if (args.positional.size() <= at) return std::nullopt;
  return ParseNumber<uint32_t>(args.positional[at], "COUNT", 1, 0xFFFFFFFFu);
}

// GET `target`, with ?count=COUNT when the command line gave COUNT at
// positional[at]: the body as the server sent it.
std::string GetWithCount(const Http& http, std::string target, const Args& args, size_t at) {
  if (const std::optional<uint32_t> count = CountArg(args, at)) {
    target += "?count=" + std::to_string(*count);
  }
  return http.Call("GET", target);
}

}  // namespace

int NextIds(const Args& args, client::Client& tcp) {
  Need(args, 1, 2, "next KEY [COUNT]");
  const std::string& key = args.positional[1];
  const uint32_t count = CountArg(args, 2).value_or(1);
  client::ClientResult<client::IdBatch> r = tcp.NextIds(key, count);
  if (!r) throw Failure{r.ToString()};
  if (args.json) {
    Json j;
    j["key"] = key;
    j["count"] = r->count();
    j["ranges"] = Json::array();
    for (const client::IdRange& range : r->ranges) {
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

int NextIds(const Args& args, const Http& http) {
  Need(args, 1, 2, "next KEY [COUNT]");
  const std::string body = GetWithCount(http, "/seq/" + UrlEncode(args.positional[1]), args, 2);
  if (args.json) {
    std::cout << body << "\n";
  } else {
    PrintIds(ParseJson(body));
  }
  return 0;
}

int Snowflake(const Args& args, client::Client& tcp) {
  Need(args, 0, 1, "snowflake [COUNT]");
  const uint32_t count = CountArg(args, 1).value_or(1);
  client::ClientResult<std::vector<int64_t>> r = tcp.NextSnowflake(count);
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

int Snowflake(const Args& args, const Http& http) {
  Need(args, 0, 1, "snowflake [COUNT]");
  const std::string body = GetWithCount(http, "/snowflake", args, 1);
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

int DecodeSnowflake(const Args& args, client::Client& tcp) {
  Need(args, 1, 1, "snowflake-decode ID");
  const int64_t id = ParseNumber<int64_t>(args.positional[1], "ID", 0, INT64_MAX);
  client::ClientResult<client::DecodedSnowflake> r = tcp.DecodeSnowflake(id);
  if (!r) throw Failure{r.ToString()};
  const Json j = DecodedJson(id, r->time_ms, r->worker, r->sequence);
  if (args.json) {
    std::cout << j.dump() << "\n";
  } else {
    PrintFlat(j);
  }
  return 0;
}

int DecodeSnowflake(const Args& args, const Http& http) {
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

}  // namespace seqd::tools
