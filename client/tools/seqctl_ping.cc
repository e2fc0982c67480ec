// `seqctl ping`: one round trip, PING over the binary protocol (--tcp) or
// GET /healthz over HTTP, and how long it took.
#include <chrono>
#include <iostream>

#include "seqctl.h"
#include "seqd/client.h"
#include "tool_args.h"

namespace seqd::tools {

int Ping(const Args& args, client::Client& tcp) {
  Need(args, 0, 0, "ping");
  client::ClientResult<std::chrono::microseconds> r = tcp.Ping();
  if (!r) throw Failure{r.ToString()};
  if (args.json) {
    std::cout << Json{{"rtt_us", r->count()}}.dump() << "\n";
  } else {
    std::cout << "pong in " << r->count() << " us\n";
  }
  return 0;
}

int Ping(const Args& args, const Http& http) {
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

}  // namespace seqd::tools
