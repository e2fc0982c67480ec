// Helpers shared by the client message tests: options for one endpoint, an
// outgoing message, and an inbox collecting pushes from the client thread.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "seqd/client.h"

namespace seqd::clienttest {

using namespace std::chrono_literals;

inline seqd::client::ClientOptions Options(uint16_t port) {
  seqd::client::ClientOptions o;
  o.endpoints = {"127.0.0.1:" + std::to_string(port)};
  o.call_timeout = 3000ms;
  return o;
}

inline seqd::client::OutgoingMessage Out(const std::string& conv, const std::string& cid,
                                         const std::string& payload,
                                         const std::string& sender = "u1") {
  return seqd::client::OutgoingMessage{conv, sender, cid, 7, payload};
}

// Collects pushes from the client's thread.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<seqd::client::Message> messages;
  std::vector<std::pair<std::vector<std::string>, std::string>> lost;

  seqd::client::AsyncClient::MessageFn OnMessage() {
    return [this](seqd::client::Message m) {
      std::lock_guard<std::mutex> l(mu);
      messages.push_back(std::move(m));
      cv.notify_all();
    };
  }
  seqd::client::AsyncClient::LostFn OnLost() {
    return [this](std::vector<std::string> convs, std::string reason) {
      std::lock_guard<std::mutex> l(mu);
      lost.emplace_back(std::move(convs), std::move(reason));
      cv.notify_all();
    };
  }
  template <typename Pred>
  bool Wait(Pred pred) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, 5s, pred);
  }
};

}  // namespace seqd::clienttest
