// seqd::client::ReceiveQueue (pure logic: randomized loss, duplication and
// reordering) and the client's handling of PUSH_DROPPED from a scripted server.
#include "seqd/receive_queue.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "proto/message_codec.h"
#include "seqd/client.h"
#include "tests/client/message_test_support.h"

using namespace std::chrono_literals;
using namespace seqd::clienttest;

namespace {

// a + b, spelled so GCC 12 raises no false -Wrestrict on it.
inline std::string Cat(std::string a, const std::string& b) {
  a += b;
  return a;
}

seqd::client::Message M(const std::string& conv, int64_t seq) {
  seqd::client::Message m;
  m.conv_id = conv;
  m.seq = seq;
  m.payload = Cat("p", std::to_string(seq));
  return m;
}

struct QueueHarness {
  std::vector<seqd::client::Message> delivered;
  std::vector<std::tuple<std::string, int64_t, int64_t>> asks;
  seqd::client::ReceiveQueue::Clock::time_point now{};
  seqd::client::ReceiveQueue q;

  explicit QueueHarness(size_t max_held = 1000)
      : q([this](const seqd::client::Message& m) { delivered.push_back(m); },
          [this](const std::string& c, int64_t from, int64_t to) {
            asks.emplace_back(c, from, to);
          },
          Options(this, max_held)) {}

  static seqd::client::ReceiveQueue::Options Options(QueueHarness* h, size_t max_held) {
    seqd::client::ReceiveQueue::Options o;
    o.retry_after = 1000ms;
    o.max_held = max_held;
    o.now = [h] { return h->now; };
    return o;
  }
};

}  // namespace

TEST_CASE("receive queue: in order, duplicates dropped, a gap asked for once") {
  QueueHarness h;
  h.q.Offer(M("a", 1));
  h.q.Offer(M("a", 1));
  h.q.Offer(M("a", 2));
  CHECK(h.delivered.size() == 2);
  CHECK(h.asks.empty());
  h.q.Offer(M("a", 5));
  h.q.Offer(M("a", 6));
  h.q.Offer(M("a", 5));
  CHECK(h.delivered.size() == 2);
  CHECK(h.q.held("a") == 2);
  REQUIRE(h.asks.size() == 1);  // once, not per message
  CHECK(h.asks[0] == std::make_tuple(std::string("a"), int64_t{3}, int64_t{4}));
  h.q.Tick();
  CHECK(h.asks.size() == 1);
  h.now += 1500ms;  // no answer: asked again
  h.q.Tick();
  CHECK(h.asks.size() == 2);
  h.q.OnPulled({M("a", 4), M("a", 3)});
  REQUIRE(h.delivered.size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(h.delivered[i].seq == i + 1);
  CHECK(h.q.local_seq("a") == 6);
  CHECK_FALSE(h.q.pending_request("a"));
  // Another conversation is independent.
  h.q.Offer(M("b", 2));
  CHECK(h.q.local_seq("b") == 0);
  CHECK(std::get<0>(h.asks.back()) == "b");
  // A lost last message is found through NoteMaxSeq.
  h.q.NoteMaxSeq("a", 8);
  CHECK(h.asks.back() == std::make_tuple(std::string("a"), int64_t{7}, int64_t{8}));
  // SetLocalSeq moves forward only and releases what follows.
  h.q.SetLocalSeq("b", 1);
  CHECK(h.q.local_seq("b") == 2);
  h.q.SetLocalSeq("b", 0);
  CHECK(h.q.local_seq("b") == 2);
}

TEST_CASE("receive queue: a partial pull answer asks for the rest at once") {
  QueueHarness h;
  h.q.Offer(M("c", 10));
  REQUIRE(h.asks.size() == 1);
  CHECK(h.asks[0] == std::make_tuple(std::string("c"), int64_t{1}, int64_t{9}));
  h.q.OnPulled({M("c", 1), M("c", 2), M("c", 3)});  // a limit of 3
  REQUIRE(h.asks.size() == 2);
  CHECK(h.asks[1] == std::make_tuple(std::string("c"), int64_t{4}, int64_t{9}));
  h.q.OnPulled({});  // nothing: wait for the retry time
  CHECK(h.asks.size() == 2);
}

TEST_CASE("receive queue: randomized loss, duplication and reordering deliver each once in order") {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const size_t max_held = 1 + rng() % 64;
    QueueHarness h(max_held);
    const std::vector<std::string> convs = {"x", "y", "z"};
    const int per_conv = 300;
    // The feed: every message, some lost, some twice, shuffled within windows.
    std::vector<seqd::client::Message> feed;
    for (const auto& c : convs) {
      for (int s = 1; s <= per_conv; ++s) {
        const auto r = rng() % 100;
        if (r < 15) continue;  // lost
        feed.push_back(M(c, s));
        if (r < 30) feed.push_back(M(c, s));  // duplicated
      }
    }
    for (size_t i = 0; i < feed.size(); i += 16) {
      std::shuffle(feed.begin() + i, feed.begin() + std::min(feed.size(), i + 16), rng);
    }
    // Interleave offers with pull answers, sometimes lost, sometimes late.
    std::vector<std::tuple<std::string, int64_t, int64_t>> in_flight;
    auto answer_some = [&] {
      std::vector<std::tuple<std::string, int64_t, int64_t>> later;
      for (auto& ask : h.asks) in_flight.push_back(ask);
      h.asks.clear();
      for (auto& [c, from, to] : in_flight) {
        const auto r = rng() % 10;
        if (r < 2) continue;  // the pull answer is lost
        if (r < 4) {
          later.emplace_back(c, from, to);
          continue;
        }
        std::vector<seqd::client::Message> page;
        for (int64_t s = from; s <= to && s < from + 50; ++s) page.push_back(M(c, s));  // limit 50
        std::shuffle(page.begin(), page.end(), rng);
        h.q.OnPulled(page);
      }
      in_flight = std::move(later);
    };
    for (const auto& m : feed) {
      h.q.Offer(m);
      if (rng() % 8 == 0) answer_some();
      h.now += std::chrono::milliseconds(rng() % 50);
      if (rng() % 16 == 0) h.q.Tick();
    }
    for (const auto& c : convs) h.q.NoteMaxSeq(c, per_conv);  // e.g. from a sync
    for (int round = 0; round < 1000; ++round) {
      bool all = true;
      for (const auto& c : convs) all = all && h.q.local_seq(c) == per_conv;
      if (all) break;
      answer_some();
      h.now += 300ms;
      h.q.Tick();
    }
    std::map<std::string, int64_t> next;
    for (const auto& m : h.delivered) {
      CHECK(m.seq == ++next[m.conv_id]);
      CHECK(m.payload == Cat("p", std::to_string(m.seq)));
    }
    for (const auto& c : convs) {
      CHECK(next[c] == per_conv);
      CHECK(h.q.held(c) == 0);
    }
    CHECK(h.delivered.size() == convs.size() * per_conv);
  }
}

TEST_CASE("client messages: PUSH_DROPPED ends raw subscriptions, later pushes are ignored") {
  namespace net = boost::asio;
  using tcp = net::ip::tcp;
  net::io_context io;
  tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = acceptor.local_endpoint().port();
  // A scripted server: answers SUBSCRIBE, pushes one message, then drops.
  std::thread server([&] {
    tcp::socket s(io);
    acceptor.accept(s);
    std::string in(12, '\0');
    net::read(s, net::buffer(in));
    const uint32_t len =
        (uint8_t(in[0]) << 24) | (uint8_t(in[1]) << 16) | (uint8_t(in[2]) << 8) | uint8_t(in[3]);
    std::string rest(len - 8, '\0');
    net::read(s, net::buffer(rest));
    const uint32_t id =
        (uint8_t(in[8]) << 24) | (uint8_t(in[9]) << 16) | (uint8_t(in[10]) << 8) | uint8_t(in[11]);
    std::string out;
    seqd::proto::AppendOkResult(out, seqd::proto::kOpSubscribe, id, seqd::proto::EmptyRes{});
    seqd::proto::MessageView m{1, 100, "u", "c", 0, 0, 5, "hi"};
    seqd::proto::AppendPushMessage(out, {"sg_d", m});
    seqd::proto::AppendPushDropped(out, seqd::proto::Status::kTooLarge, "slow");
    m.seq = 2;
    seqd::proto::AppendPushMessage(out, {"sg_d", m});  // after the drop: not delivered
    net::write(s, net::buffer(out));
    std::this_thread::sleep_for(500ms);
  });
  Inbox inbox;
  {
    seqd::client::ClientOptions o = Options(port);
    o.resubscribe = false;  // the raw op: nothing re-subscribes
    seqd::client::Client c(o);
    REQUIRE(c.Subscribe({"sg_d"}, inbox.OnMessage(), inbox.OnLost()).ok());
    REQUIRE(inbox.Wait([&] { return !inbox.lost.empty(); }));
    std::this_thread::sleep_for(100ms);
  }
  server.join();
  std::lock_guard<std::mutex> l(inbox.mu);
  REQUIRE(inbox.messages.size() == 1);
  CHECK(inbox.messages[0].seq == 1);
  CHECK(inbox.messages[0].payload == "hi");
  CHECK(inbox.lost.size() == 1);
  CHECK(inbox.lost[0].first == std::vector<std::string>{"sg_d"});
  CHECK(inbox.lost[0].second.find("slow") != std::string::npos);
}
