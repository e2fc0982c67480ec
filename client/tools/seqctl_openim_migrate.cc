// seqctl's OpenIM migration (docs/openim.md, "Migration"): OpenIM's Mongo
// collections `seq` (conversation_id, max_seq, min_seq) and `seq_user`
// (user_id, conversation_id, min_seq, max_seq, read_seq), as mongoexport
// writes them (a document per line, or --jsonArray; numbers plain or as
// {"$numberLong": "..."}), into seqd, and back:
//
//   openim-import seq FILE        each conversation's max seq (a dense key
//                                 advanced by blocks until its max is
//                                 max_seq) and min seq
//   openim-import seq-user FILE   each user's min, max and read seqs
//   openim-export seq FILE [PREFIX...]          the conversations seqd has
//                                 (default prefixes: OpenIM's)
//   openim-export seq-user USERS_FILE FILE      the user seqs of the users
//                                 listed (one id per line) in those
//                                 conversations
//
// Imports are idempotent and resumable: a conversation already at or above
// its max_seq is left alone, min and max seqs are set (the same values
// again change nothing), read seqs only raised; a run cut short is finished
// by running it again. --dry-run reads the files and seqd and prints what
// an import would do, writing nothing. Over the binary protocol (--tcp);
// the export of seq lists the keys over HTTP (--http, the admin scope).
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "seqctl.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {
namespace {

constexpr size_t kBatch = 1000;
// The largest block asked at once: dense_max_count's default.
constexpr int64_t kMaxBlock = 100'000;
const std::vector<std::string> kOpenImPrefixes = {"si_", "g_", "sg_", "sn_", "n_"};

// An int64 of a mongoexport document: a JSON number, or {"$numberLong":
// "N"} / {"$numberInt": "N"}; 0 when absent.
int64_t Int64Of(const Json& doc, const char* field) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_object()) {
    for (const char* wrap : {"$numberLong", "$numberInt"}) {
      if (it->contains(wrap) && (*it)[wrap].is_string()) {
        return ParseNumber<int64_t>((*it)[wrap].get<std::string>(), field,
                                    std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max());
      }
    }
  }
  throw Failure{std::string("a document's ") + field + " is not an integer: " + it->dump()};
}

std::string StringOf(const Json& doc, const char* field) {
  auto it = doc.find(field);
  if (it == doc.end() || !it->is_string()) {
    throw Failure{std::string("a document has no string ") + field + ": " + doc.dump()};
  }
  return it->get<std::string>();
}

// The documents of a mongoexport file: a JSON array, or one per line.
std::vector<Json> ReadDocuments(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure{"cannot read " + path};
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<Json> docs;
  if (first != std::string::npos && text[first] == '[') {
    for (Json& d : ParseJson(text)) docs.push_back(std::move(d));
    return docs;
  }
  std::istringstream lines(text);
  std::string line;
  for (size_t n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json d = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!d.is_object()) throw Failure{path + ":" + std::to_string(n) + ": not a JSON document"};
    docs.push_back(std::move(d));
  }
  return docs;
}

template <typename T>
T Must(client::ClientResult<T> r, const std::string& what) {
  if (!r) throw Failure{what + ": " + r.ToString()};
  return std::move(*r);
}

// Advances dense key `conv` from `cur` to `target` by blocks of at most
// kMaxBlock, each under a token naming where it starts (a retry of a lost
// answer replays it; a later run starts from the new max).
void AdvanceTo(client::Client& tcp, const std::string& conv, int64_t cur, int64_t target) {
  while (cur < target) {
    const auto count = static_cast<uint32_t>(std::min(kMaxBlock, target - cur));
    const std::string token = "openim-import-" + std::to_string(cur) + "+" + std::to_string(count);
    const client::IdRange r = Must(tcp.NextBlockOnce(conv, count, token), conv);
    if (r.first != cur + 1) {
      throw Failure{conv + ": the block starts at " + std::to_string(r.first) + ", not " +
                    std::to_string(cur + 1) + " (is seqd serving it meanwhile?)"};
    }
    cur = r.last;
  }
}

int ImportSeq(const Args& args, client::Client& tcp, const std::string& path) {
  const std::vector<Json> docs = ReadDocuments(path);
  int64_t advanced = 0, seqs = 0, already = 0;
  std::vector<std::pair<std::string, int64_t>> mins;
  for (size_t at = 0; at < docs.size(); at += kBatch) {
    std::vector<std::string> convs;
    std::vector<int64_t> targets;
    for (size_t i = at; i < std::min(docs.size(), at + kBatch); ++i) {
      convs.push_back(StringOf(docs[i], "conversation_id"));
      targets.push_back(Int64Of(docs[i], "max_seq"));
      if (const int64_t m = Int64Of(docs[i], "min_seq"); m > 0) mins.emplace_back(convs.back(), m);
    }
    const std::vector<int64_t> cur = Must(tcp.MaxIds(convs), "max-ids");
    for (size_t i = 0; i < convs.size(); ++i) {
      if (cur[i] >= targets[i]) {
        ++already;
        continue;
      }
      ++advanced;
      seqs += targets[i] - cur[i];
      if (args.dry_run) {
        std::cout << convs[i] << ": max seq " << cur[i] << " -> " << targets[i] << "\n";
        continue;
      }
      AdvanceTo(tcp, convs[i], cur[i], targets[i]);
    }
  }
  for (size_t at = 0; at < mins.size() && !args.dry_run; at += kBatch) {
    Must(tcp.SetMinSeqs({mins.begin() + at, mins.begin() + std::min(mins.size(), at + kBatch)}),
         "set-min-seqs");
  }
  std::cout << (args.dry_run ? "dry run: " : "") << "seq: " << docs.size() << " conversations, "
            << advanced << (args.dry_run ? " to advance by " : " advanced by ") << seqs
            << " seqs, " << already << " already there, " << mins.size() << " min seqs"
            << (args.dry_run ? " to set" : " set") << "\n";
  return 0;
}

int ImportSeqUser(const Args& args, client::Client& tcp, const std::string& path) {
  const std::vector<Json> docs = ReadDocuments(path);
  // user -> field -> (conversation, value); 0s are seqd's default: not sent.
  std::map<std::string, std::map<uint8_t, std::vector<std::pair<std::string, int64_t>>>> by_user;
  for (const Json& d : docs) {
    const std::string user = StringOf(d, "user_id");
    const std::string conv = StringOf(d, "conversation_id");
    for (const auto& [field, name] : {std::pair<uint8_t, const char*>{1, "min_seq"},
                                      {2, "max_seq"},
                                      {3, "read_seq"}}) {
      if (const int64_t v = Int64Of(d, name); v != 0) by_user[user][field].emplace_back(conv, v);
    }
  }
  size_t values = 0;
  for (const auto& [user, fields] : by_user) {
    for (const auto& [field, list] : fields) {
      values += list.size();
      for (size_t at = 0; at < list.size() && !args.dry_run; at += kBatch) {
        // Read seqs only rise: a re-run never lowers what OpenIM moved since.
        Must(tcp.SetUserSeqs(user, field, /*raise_only=*/field == 3,
                             {list.begin() + at, list.begin() + std::min(list.size(), at + kBatch)}),
             "set user seqs of " + user);
      }
    }
  }
  std::cout << (args.dry_run ? "dry run: " : "") << "seq_user: " << docs.size() << " documents, "
            << by_user.size() << " users, " << values << " values"
            << (args.dry_run ? " to set" : " set") << "\n";
  return 0;
}

// The keys seqd has whose names start with one of `prefixes`, in order.
std::vector<std::string> ListConversations(const Http& http, const std::vector<std::string>& prefixes) {
  std::vector<std::string> out;
  std::string after;
  std::set<std::string> page_ends;
  for (;;) {
    const Json page = ParseJson(http.Call(
        "GET", "/admin/keys?limit=1000" + (after.empty() ? "" : "&after=" + UrlEncode(after))));
    for (const Json& k : page.value("keys", Json::array())) {
      const std::string key = k.value("key", std::string());
      for (const std::string& p : prefixes) {
        if (key.rfind(p, 0) == 0) {
          out.push_back(key);
          break;
        }
      }
    }
    if (!page.contains("next_after") || !page["next_after"].is_string()) return out;
    std::string next = page["next_after"].get<std::string>();
    // The pages go in the table's collation order: a page end seen twice
    // is a cycle (never a longer list).
    if (!page_ends.insert(next).second) {
      throw Failure{"the key list came back to '" + next + "'"};
    }
    after = std::move(next);
  }
}

std::ofstream OpenOut(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw Failure{"cannot write " + path};
  return out;
}

int ExportSeq(const Args& args, client::Client& tcp, const Http& http, const std::string& path) {
  std::vector<std::string> prefixes(args.positional.begin() + 3, args.positional.end());
  if (prefixes.empty()) prefixes = kOpenImPrefixes;
  const std::vector<std::string> convs = ListConversations(http, prefixes);
  std::ofstream out = OpenOut(path);
  size_t written = 0;
  for (size_t at = 0; at < convs.size(); at += kBatch) {
    const std::vector<std::string> part(convs.begin() + at,
                                        convs.begin() + std::min(convs.size(), at + kBatch));
    const std::vector<int64_t> maxes = Must(tcp.MaxIds(part), "max-ids");
    const std::vector<int64_t> mins = Must(tcp.GetMinSeqs(part), "min-seqs");
    for (size_t i = 0; i < part.size(); ++i) {
      out << Json{{"conversation_id", part[i]}, {"max_seq", maxes[i]}, {"min_seq", mins[i]}}.dump()
          << "\n";
      ++written;
    }
  }
  std::cout << "seq: " << written << " conversations written to " << path << "\n";
  return 0;
}

int ExportSeqUser(client::Client& tcp, const Http& http, const std::string& users_path,
                  const std::string& path) {
  std::ifstream users_in(users_path);
  if (!users_in) throw Failure{"cannot read " + users_path};
  std::vector<std::string> users;
  for (std::string line; std::getline(users_in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) users.push_back(line);
  }
  const std::vector<std::string> convs = ListConversations(http, kOpenImPrefixes);
  std::ofstream out = OpenOut(path);
  size_t written = 0;
  for (const std::string& user : users) {
    for (size_t at = 0; at < convs.size(); at += kBatch) {
      const std::vector<std::string> part(convs.begin() + at,
                                          convs.begin() + std::min(convs.size(), at + kBatch));
      std::vector<std::vector<int64_t>> v;  // min, max, read
      for (uint8_t field = 1; field <= 3; ++field) {
        v.push_back(Must(tcp.UserSeqs(user, field, part), "user seqs of " + user));
      }
      for (size_t i = 0; i < part.size(); ++i) {
        if (v[0][i] == 0 && v[1][i] == 0 && v[2][i] == 0) continue;
        out << Json{{"user_id", user}, {"conversation_id", part[i]}, {"min_seq", v[0][i]},
                    {"max_seq", v[1][i]}, {"read_seq", v[2][i]}}.dump()
            << "\n";
        ++written;
      }
    }
  }
  std::cout << "seq_user: " << written << " documents written to " << path << "\n";
  return 0;
}

}  // namespace

int OpenImMigrateCommand(const Args& args, client::Client& tcp, const Http& http) {
  const std::string& cmd = args.positional[0];
  if (args.positional.size() < 3) {
    throw UsageError{"usage: seqctl --tcp HOST:PORT " + cmd +
                     (cmd == "openim-import" ? " seq|seq-user FILE" : " seq FILE | seq-user USERS_FILE FILE")};
  }
  const std::string& what = args.positional[1];
  if (cmd == "openim-import") {
    Need(args, 2, 2, "openim-import seq|seq-user FILE");
    if (what == "seq") return ImportSeq(args, tcp, args.positional[2]);
    if (what == "seq-user") return ImportSeqUser(args, tcp, args.positional[2]);
  } else {
    if (args.dry_run) throw UsageError{"--dry-run only applies to openim-import"};
    if (what == "seq") return ExportSeq(args, tcp, http, args.positional[2]);
    if (what == "seq-user") {
      Need(args, 3, 3, "openim-export seq-user USERS_FILE FILE");
      return ExportSeqUser(tcp, http, args.positional[2], args.positional[3]);
    }
  }
  throw UsageError{cmd + " takes seq or seq-user, not '" + what + "'"};
}

}  // namespace seqd::tools
