// client_live_subs_driver: the C++ client's Subscription handles as a chat
// gateway drives them, for tests/e2e/test_client_live_subs.py. One
// seqd::client::Client (its options allow a server away a few seconds:
// --max-attempts 60, --backoff-max 100 ms) and the subscriptions named on
// the command line; commands on stdin, one a line, run in order:
//   add SUB CONV[,CONV...] [CONV:FROM[,CONV:FROM...]]   Subscription::Add
//   remove SUB CONV[,CONV...]                          Subscription::Remove
// Every event is one JSON line on stdout, written whole under one lock, in
// the order it happened on the client (a message line is written by
// on_message on the client's I/O thread, before the Remove that stops it
// returns):
//   {"ev":"ready"}                      the subscriptions exist
//   {"ev":"adding"|"removing","sub":S,"convs":[...]}   the call starts
//   {"ev":"added"|"removed","sub":S,"convs":[...]}     it returned OK
//   {"ev":"failed","sub":S,"convs":[...],"error":"..."}
//   {"ev":"msg","sub":S,"conv":C,"seq":N,"cmid":"...","payload":"..."}
//   {"ev":"lost","sub":S,"convs":[...],"reason":"..."}
// Ends at end of stdin (exit 0).
//
// Usage: client_live_subs_driver HOST:PORT SUB[:DELAY_US] [SUB[:DELAY_US]...]
// (DELAY_US: how long SUB's on_message sleeps per message, on the client's
// I/O thread: messages queue up behind it).
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seqd/client.h"

namespace {

std::mutex out_mu;

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += "?";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string List(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + Quote(items[i]);
  return out + "]";
}

void Emit(const std::string& line) {
  std::lock_guard<std::mutex> l(out_mu);
  std::cout << line << "\n" << std::flush;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string Call(const std::string& ev, const std::string& sub,
                 const std::vector<std::string>& convs) {
  return "{\"ev\":\"" + ev + "\",\"sub\":" + Quote(sub) + ",\"convs\":" + List(convs);
}

// Runs one command line against the named subscriptions.
void Run(const std::string& line,
         std::map<std::string, std::unique_ptr<seqd::client::Subscription>>& subs) {
  std::vector<std::string> words = Split(line, ' ');
  if (words.size() < 3 || !subs.count(words[1])) {
    Emit("{\"ev\":\"bad_command\",\"line\":" + Quote(line) + "}");
    return;
  }
  seqd::client::Subscription& sub = *subs[words[1]];
  const std::vector<std::string> convs = Split(words[2], ',');
  const bool add = words[0] == "add";
  Emit(Call(add ? "adding" : "removing", words[1], convs) + "}");
  seqd::client::ClientResult<bool> r(true);
  if (add) {
    std::map<std::string, int64_t> from;
    if (words.size() > 3) {
      for (const std::string& kv : Split(words[3], ',')) {
        const size_t colon = kv.rfind(':');
        from[kv.substr(0, colon)] = std::stoll(kv.substr(colon + 1));
      }
    }
    r = sub.Add(convs, from);
  } else {
    r = sub.Remove(convs);
  }
  if (r.ok()) {
    Emit(Call(add ? "added" : "removed", words[1], convs) + "}");
  } else {
    Emit(Call("failed", words[1], convs) + ",\"error\":" + Quote(r.ToString()) + "}");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: client_live_subs_driver HOST:PORT SUB[:DELAY_US] [SUB[:DELAY_US]...]\n";
    return 2;
  }
  seqd::client::ClientOptions o;
  o.endpoints = {argv[1]};
  o.max_attempts = 60;
  o.backoff_max = std::chrono::milliseconds(100);
  seqd::client::Client client(o);
  std::map<std::string, std::unique_ptr<seqd::client::Subscription>> subs;
  for (int i = 2; i < argc; ++i) {
    const std::vector<std::string> parts = Split(argv[i], ':');
    const std::string name = parts.at(0);
    const auto delay = std::chrono::microseconds(parts.size() > 1 ? std::stoll(parts[1]) : 0);
    subs[name] = client.NewSubscription(
        [name, delay](seqd::client::Message m) {
          Emit("{\"ev\":\"msg\",\"sub\":" + Quote(name) + ",\"conv\":" + Quote(m.conv_id) +
               ",\"seq\":" + std::to_string(m.seq) + ",\"cmid\":" + Quote(m.client_msg_id) +
               ",\"payload\":" + Quote(m.payload) + "}");
          std::this_thread::sleep_for(delay);
        },
        [name](std::vector<std::string> convs, std::string reason) {
          Emit(Call("lost", name, convs) + ",\"reason\":" + Quote(reason) + "}");
        });
  }
  Emit("{\"ev\":\"ready\"}");
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty()) Run(line, subs);
  }
  subs.clear();
  return 0;
}
