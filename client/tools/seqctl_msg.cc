#include "seqctl_msg.h"

#include <condition_variable>
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common/mutex.h"
#include "mini_http.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {

const char* const kMsgHelp =
    R"(  msg send CONV SENDER TEXT [--client-msg-id ID] [--content-type N]
                                store a message; prints its seq. A re-send
                                with the same --client-msg-id answers the
                                first one's seq (duplicate); default: a
                                fresh random id
  msg pull CONV [--from N] [--to N] [--limit N] [--desc] [--user U]
                                messages, one per line: seq, sender, time,
                                status, payload
  msg get CONV SEQ              one message
  msg max CONV...               each conversation's max seq
  msg read CONV USER SEQ        USER has read CONV up to SEQ
  msg subscribe CONV... [--count N]
                                (needs --tcp) prints every new message as it
                                comes, in seq order, across reconnects, until
                                N messages or Ctrl-C; "subscribed" on stderr
                                once the starting point is fixed
)";

namespace {

using Json = nlohmann::ordered_json;
using client::ClientResult;

void Need(const MsgArgs& a, size_t min, size_t max, const char* usage) {
  const size_t n = a.words.size() - 1;
  if (n < min || n > max) throw UsageError{std::string("usage: seqctl msg ") + usage};
}

// The value of a call that worked; else Failure.
template <typename T>
T Ok(ClientResult<T> r) {
  if (!r) throw Failure{r.ToString()};
  return std::move(r.value());
}

Json ParseBody(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) throw Failure{"the server's answer is not JSON: " + body};
  return j;
}

const char* StatusName(client::MessageStatus s) {
  switch (s) {
    case client::MessageStatus::kNormal:
      return "normal";
    case client::MessageStatus::kRecalled:
      return "recalled";
    case client::MessageStatus::kDeleted:
      return "deleted";
  }
  return "?";
}

// A message in the HTTP API's shape, whichever way it came.
Json MessageJson(const client::Message& m) {
  return Json{{"conv_id", m.conv_id},
              {"seq", m.seq},
              {"server_msg_id", m.server_msg_id},
              {"sender_id", m.sender_id},
              {"client_msg_id", m.client_msg_id},
              {"content_type", m.content_type},
              {"payload", m.payload},
              {"send_time", m.send_time_ms},
              {"status", StatusName(m.status)}};
}

std::string MessageLine(const Json& m) {
  return std::to_string(m.value("seq", int64_t{0})) + "  " + m.value("sender_id", "") + "  " +
         UtcTime(m.value("send_time", int64_t{0})) + "  " + m.value("status", "") + "  " +
         m.value("payload", "");
}

// Prints `j` as JSON, or each of its messages as a line.
void PrintMessages(const Json& j, bool json) {
  if (json) {
    std::cout << j.dump() << "\n";
    return;
  }
  std::string out;
  for (const Json& m : j.value("messages", Json::array())) out += MessageLine(m) + "\n";
  if (!j.value("is_end", true)) out += "(more: --from the next seq)\n";
  std::cout << out;
}

std::string RandomClientMsgId() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "seqctl-%08x%08x", rd(), rd());
  return buf;
}

int Send(const MsgArgs& a, const MsgServer& s) {
  Need(a, 3, 3, "send CONV SENDER TEXT [--client-msg-id ID] [--content-type N]");
  client::OutgoingMessage m{a.words[1], a.words[2],
                            a.client_msg_id ? *a.client_msg_id : RandomClientMsgId(), 0,
                            a.words[3]};
  if (a.content_type) {
    m.content_type = ParseNumber<int32_t>(*a.content_type, "--content-type", 0, INT32_MAX);
  }
  Json j;
  if (s.tcp) {
    const client::SendResult r = Ok(s.tcp->Send(m));
    j = Json{{"seq", r.seq},
             {"server_msg_id", r.server_msg_id},
             {"send_time", r.send_time_ms},
             {"duplicate", r.duplicate}};
  } else {
    j = ParseBody(s.http("POST", "/conversations/" + UrlEncode(m.conv_id) + "/messages",
                         Json{{"sender_id", m.sender_id},
                              {"client_msg_id", m.client_msg_id},
                              {"content_type", m.content_type},
                              {"payload", m.payload}}
                             .dump()));
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "seq " << j.value("seq", int64_t{0}) << " (client_msg_id " << m.client_msg_id
              << (j.value("duplicate", false) ? ", a duplicate: stored before" : "") << ")\n";
  }
  return 0;
}

int Pull(const MsgArgs& a, const MsgServer& s) {
  Need(a, 1, 1, "pull CONV [--from N] [--to N] [--limit N] [--desc] [--user U]");
  client::PullOptions o;
  if (a.from) o.from_seq = ParseNumber<int64_t>(*a.from, "--from", 1, INT64_MAX);
  if (a.to) o.to_seq = ParseNumber<int64_t>(*a.to, "--to", 1, INT64_MAX);
  if (a.limit) o.limit = ParseNumber<uint32_t>(*a.limit, "--limit", 1, 1000);
  o.descending = a.desc;
  if (a.user) o.user_id = *a.user;
  const std::string& conv = a.words[1];
  Json j;
  if (s.tcp) {
    const client::PullPage page = Ok(s.tcp->PullRange(conv, o));
    j["messages"] = Json::array();
    for (const client::Message& m : page.messages) j["messages"].push_back(MessageJson(m));
    j["is_end"] = page.is_end;
  } else {
    std::string target = "/conversations/" + UrlEncode(conv) +
                         "/messages?from=" + std::to_string(o.from_seq) +
                         "&limit=" + std::to_string(o.limit);
    if (a.to) target += "&to=" + std::to_string(o.to_seq);
    if (a.desc) target += "&order=desc";
    if (a.user) target += "&user=" + UrlEncode(*a.user);
    j = ParseBody(s.http("GET", target, ""));
  }
  PrintMessages(j, a.json);
  return 0;
}

int Get(const MsgArgs& a, const MsgServer& s) {
  Need(a, 2, 2, "get CONV SEQ");
  const std::string& conv = a.words[1];
  const int64_t seq = ParseNumber<int64_t>(a.words[2], "SEQ", 1, INT64_MAX);
  Json j;
  if (s.tcp) {
    const std::vector<client::Message> ms = Ok(s.tcp->PullSeqs(conv, {seq}));
    if (ms.empty()) throw Failure{"NOT_FOUND: no message " + std::to_string(seq) + " in " + conv};
    j = MessageJson(ms.front());
  } else {
    j = ParseBody(s.http(
        "GET", "/conversations/" + UrlEncode(conv) + "/messages/" + std::to_string(seq), ""));
  }
  std::cout << (a.json ? j.dump() : MessageLine(j)) << "\n";
  return 0;
}

int Max(const MsgArgs& a, const MsgServer& s) {
  Need(a, 1, 1000, "max CONV...");
  const std::vector<std::string> convs(a.words.begin() + 1, a.words.end());
  Json max_seqs = Json::object();
  if (s.tcp) {
    const std::vector<int64_t> r = Ok(s.tcp->MaxSeqs(convs));
    for (size_t i = 0; i < convs.size() && i < r.size(); ++i) max_seqs[convs[i]] = r[i];
  } else {
    max_seqs =
        ParseBody(s.http("POST", "/conversations/max_seqs", Json{{"conv_ids", convs}}.dump()))
            .value("max_seqs", Json::object());
  }
  if (a.json) {
    std::cout << Json{{"max_seqs", max_seqs}}.dump() << "\n";
    return 0;
  }
  std::string out;
  for (const std::string& c : convs) out += c + "  " + max_seqs.value(c, Json(0)).dump() + "\n";
  std::cout << out;
  return 0;
}

int Read(const MsgArgs& a, const MsgServer& s) {
  Need(a, 3, 3, "read CONV USER SEQ");
  const std::string &conv = a.words[1], &user = a.words[2];
  const int64_t seq = ParseNumber<int64_t>(a.words[3], "SEQ", 0, INT64_MAX);
  Json j;
  if (s.tcp) {
    const client::MemberInfo m = Ok(s.tcp->MarkRead(conv, user, seq));
    j = Json{{"conv_id", conv},
             {"user_id", user},
             {"min_seq", m.min_seq},
             {"max_seq", m.max_seq ? Json(*m.max_seq) : Json()},
             {"read_seq", m.read_seq}};
  } else {
    j = ParseBody(s.http(
        "PUT", "/conversations/" + UrlEncode(conv) + "/members/" + UrlEncode(user) + "/read_seq",
        Json{{"read_seq", seq}}.dump()));
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << user << " has read " << conv << " up to " << j.value("read_seq", int64_t{0})
              << "\n";
  }
  return 0;
}

// Prints pushed messages until --count of them, or until the server
// refuses the subscription for good.
int Subscribe(const MsgArgs& a, const MsgServer& s) {
  Need(a, 1, 1000, "subscribe CONV... [--count N]");
  if (!s.tcp) throw UsageError{"msg subscribe needs --tcp (pushes come over the binary protocol)"};
  const uint64_t count =
      a.count ? ParseNumber<uint64_t>(*a.count, "--count", 1, UINT64_MAX) : UINT64_MAX;
  // Shared with the callbacks, which may run until the client is gone.
  struct State {
    Mutex mu;  // also serializes the printing of pushes
    std::condition_variable cv;
    uint64_t seen GUARDED_BY(mu) = 0;
    std::optional<std::string> gave_up GUARDED_BY(mu);
  };
  auto st = std::make_shared<State>();
  const bool json = a.json;
  auto on_message = [st, count, json](client::Message m) {
    MutexLock l(st->mu);
    if (st->seen >= count) return;
    const Json j = MessageJson(m);
    std::cout << (json ? j.dump() : m.conv_id + "  " + MessageLine(j)) << std::endl;
    if (++st->seen >= count) st->cv.notify_all();
  };
  auto on_lost = [st](std::vector<std::string> convs, std::string reason) {
    MutexLock l(st->mu);
    std::string names;
    for (const std::string& c : convs) names += (names.empty() ? "" : ",") + c;
    if (reason.rfind("gave up", 0) == 0) {
      st->gave_up = names + ": " + reason;
      st->cv.notify_all();
    } else {
      std::cerr << "seqctl: pushes of " << names << " stopped (" << reason << "); re-subscribing"
                << std::endl;
    }
  };
  const std::vector<std::string> convs(a.words.begin() + 1, a.words.end());
  Ok(s.tcp->Subscribe(convs, on_message, on_lost));
  {
    // The start point is fixed now: every message after it follows.
    MutexLock l(st->mu);
    std::cerr << "seqctl: subscribed to " << convs.size() << " conversation"
              << (convs.size() == 1 ? "" : "s") << std::endl;
  }
  MutexLock l(st->mu);
  st->cv.wait(l.native(),
              [&]() REQUIRES(st->mu) { return st->seen >= count || st->gave_up.has_value(); });
  if (st->gave_up) throw Failure{*st->gave_up};
  return 0;
}

}  // namespace

int RunMsg(const MsgArgs& args, const MsgServer& server) {
  if (args.words.empty()) throw UsageError{"usage: seqctl msg send|pull|get|max|read|subscribe"};
  const std::string& sub = args.words[0];
  if (args.count && sub != "subscribe") throw UsageError{"--count only applies to msg subscribe"};
  if ((args.from || args.to || args.limit || args.desc || args.user) && sub != "pull") {
    throw UsageError{"--from, --to, --limit, --desc and --user only apply to msg pull"};
  }
  if ((args.client_msg_id || args.content_type) && sub != "send") {
    throw UsageError{"--client-msg-id and --content-type only apply to msg send"};
  }
  if (sub == "send") return Send(args, server);
  if (sub == "pull") return Pull(args, server);
  if (sub == "get") return Get(args, server);
  if (sub == "max") return Max(args, server);
  if (sub == "read") return Read(args, server);
  if (sub == "subscribe") return Subscribe(args, server);
  throw UsageError{"unknown msg command '" + sub + "' (send, pull, get, max, read, subscribe)"};
}

}  // namespace seqd::tools
