// The client's own re-subscription (ClientOptions::resubscribe) against a
// scripted server that misbehaves on purpose: duplicate and out-of-order
// pushes, a gap, PUSH_DROPPED, messages stored while nobody is subscribed,
// and seqs trimmed away below the conversation's min seq.
#include <doctest/doctest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "proto/message_codec.h"
#include "seqd/client.h"
#include "tests/client/message_test_support.h"

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;
using seqd::clienttest::Inbox;
using seqd::clienttest::Options;

// One conversation's rows on the scripted server.
struct ScriptedConv {
  std::map<int64_t, std::string> rows;  // seq -> payload
  int64_t max = 0;                      // what MAX_SEQS answers
  void Store(int64_t seq) {
    rows[seq] = "m" + std::to_string(seq);
    max = std::max(max, seq);
  }
};

seqd::proto::MessageView View(int64_t seq, const std::string& payload) {
  return seqd::proto::MessageView{seq, 1000 + seq, "u", payload, 0, 0, 5, payload};
}

// Appends a push of `c`'s row `seq`.
void Push(std::string& out, const std::string& conv, ScriptedConv& c, int64_t seq) {
  seqd::proto::AppendPushMessage(out, {conv, View(seq, c.rows.at(seq))});
}

// Serves one connection (the only one it accepts) on its own thread. `on_subscribe(n, out)` runs at
// the n-th SUBSCRIBE (1-based), after its answer, to push whatever the test
// wants; `on_max_seqs(n)` (if set) runs after the n-th MAX_SEQS is answered;
// MAX_SEQS and PULL_RANGE answer from `convs`.
class ScriptedServer {
 public:
  using OnSubscribe = std::function<void(int n, std::string& out)>;
  ScriptedServer(std::map<std::string, ScriptedConv>& convs, OnSubscribe on_subscribe,
                 std::function<void(int n)> on_max_seqs = nullptr)
      : acceptor_(io_, {net::ip::make_address("127.0.0.1"), 0}),
        convs_(convs),
        on_subscribe_(std::move(on_subscribe)),
        on_max_seqs_(std::move(on_max_seqs)) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() { thread_.join(); }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int pulls() const { return pulls_; }
  int unsubscribes() const { return unsubscribes_; }

 private:
  void Serve() {
    tcp::socket s(io_);
    acceptor_.accept(s);
    std::string in;
    char buf[4096];
    int subscribes = 0;
    int max_seqs = 0;
    for (;;) {
      boost::system::error_code ec;
      const size_t n = s.read_some(net::buffer(buf), ec);
      if (ec) return;  // the client went
      in.append(buf, n);
      std::string out;
      for (;;) {
        const seqd::proto::DecodeResult r = seqd::proto::DecodeFrame(in);
        if (r.state != seqd::proto::DecodeState::kFrame) break;
        const seqd::proto::FrameView& f = r.frame;
        const auto op = static_cast<seqd::proto::Opcode>(f.opcode);
        if (op == seqd::proto::kOpMaxSeqs) {
          auto q = seqd::proto::DecodeBody<seqd::proto::MaxSeqsReq>(f.payload);
          if (!q) return;  // the test then fails on what the client saw
          seqd::proto::MaxSeqsRes res;
          for (auto c : q->conv_ids) res.max_seqs.push_back(convs_[std::string(c)].max);
          seqd::proto::AppendOkResult(out, op, f.request_id, res);
          if (on_max_seqs_) on_max_seqs_(++max_seqs);
        } else if (op == seqd::proto::kOpSubscribe) {
          seqd::proto::AppendOkResult(out, op, f.request_id, seqd::proto::EmptyRes{});
          on_subscribe_(++subscribes, out);
        } else if (op == seqd::proto::kOpPullRange) {
          ++pulls_;
          auto q = seqd::proto::DecodeBody<seqd::proto::PullRangeReq>(f.payload);
          if (!q) return;
          seqd::proto::PullRangeRes res;
          const ScriptedConv& c = convs_[std::string(q->conv_id)];
          for (auto it = c.rows.lower_bound(q->from_seq);
               it != c.rows.end() && (q->to_seq == 0 || it->first <= q->to_seq); ++it) {
            res.messages.push_back(View(it->first, it->second));
          }
          seqd::proto::AppendOkResult(out, op, f.request_id, res);
        } else {
          if (op == seqd::proto::kOpUnsubscribe) ++unsubscribes_;
          seqd::proto::AppendOkResult(out, op, f.request_id, seqd::proto::EmptyRes{});
        }
        in.erase(0, r.consumed);
      }
      if (!out.empty()) net::write(s, net::buffer(out), ec);
    }
  }

  net::io_context io_;
  tcp::acceptor acceptor_;
  std::map<std::string, ScriptedConv>& convs_;
  OnSubscribe on_subscribe_;
  std::function<void(int n)> on_max_seqs_;
  std::atomic<int> pulls_{0};
  std::atomic<int> unsubscribes_{0};
  std::thread thread_;
};

std::vector<int64_t> Seqs(Inbox& inbox) {
  std::lock_guard<std::mutex> l(inbox.mu);
  std::vector<int64_t> out;
  for (const auto& m : inbox.messages) out.push_back(m.seq);
  return out;
}

}  // namespace

TEST_CASE(
    "resubscribe: duplicates, a gap, PUSH_DROPPED and a silent outage reach the app once, in "
    "order") {
  std::map<std::string, ScriptedConv> convs;
  convs["sg_k"].Store(1);  // before the Subscribe call: not delivered
  Inbox inbox;
  std::optional<ScriptedServer> server;
  server.emplace(convs, [&convs](int n, std::string& out) {
    ScriptedConv& c = convs["sg_k"];
    if (n == 1) {
      for (int64_t s = 2; s <= 5; ++s) c.Store(s);
      Push(out, "sg_k", c, 2);
      Push(out, "sg_k", c, 3);
      Push(out, "sg_k", c, 3);  // a duplicate
      Push(out, "sg_k", c, 5);  // a gap: 4 comes by pull
      Push(out, "sg_k", c, 2);  // late and old
      seqd::proto::AppendPushDropped(out, seqd::proto::Status::kTooLarge, "slow reader");
      c.Store(6);  // stored while nothing is subscribed: no push, ever
      c.Store(7);
    } else if (n == 2) {
      c.Store(8);
      Push(out, "sg_k", c, 8);
      Push(out, "sg_k", c, 7);  // old, out of order
    }
  });
  {
    seqd::client::Client client(Options(server->port()));
    REQUIRE(client.Subscribe({"sg_k"}, inbox.OnMessage(), inbox.OnLost()).ok());
    REQUIRE(inbox.Wait([&] { return inbox.messages.size() >= 7; }));
    std::this_thread::sleep_for(200ms);  // a duplicate would show by now
  }
  server.reset();
  CHECK(Seqs(inbox) == std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8});
  std::lock_guard<std::mutex> l(inbox.mu);
  for (const auto& m : inbox.messages) CHECK(m.payload == "m" + std::to_string(m.seq));
  REQUIRE(inbox.lost.size() == 1);
  CHECK(inbox.lost[0].second.find("slow reader") != std::string::npos);
}

TEST_CASE("resubscribe: seqs trimmed below the min seq are skipped after three empty pulls") {
  std::map<std::string, ScriptedConv> convs;
  Inbox inbox;
  std::optional<ScriptedServer> server;
  server.emplace(convs, [&convs](int n, std::string& out) {
    if (n != 1) return;
    ScriptedConv& c = convs["sg_t"];
    for (int64_t s = 1; s <= 8; ++s) c.Store(s);
    for (int64_t s = 1; s <= 5; ++s) c.rows.erase(s);  // the min seq moved to 6
    Push(out, "sg_t", c, 8);
  });
  {
    seqd::client::Client client(Options(server->port()));
    REQUIRE(client.Subscribe({"sg_t"}, inbox.OnMessage(), inbox.OnLost()).ok());
    REQUIRE(inbox.Wait([&] { return inbox.messages.size() >= 3; }));
    CHECK(server->pulls() >= 3);
  }
  server.reset();
  CHECK(Seqs(inbox) == std::vector<int64_t>{6, 7, 8});
}

// Cluster mode: a push committed while the conversation's owner moves can be
// lost, with no later push to show the gap. The periodic MAX_SEQS
// (ClientOptions::resync_every) must deliver it anyway.
TEST_CASE("resubscribe: a lost last push arrives by the periodic MAX_SEQS") {
  std::map<std::string, ScriptedConv> convs;
  Inbox inbox;
  std::optional<ScriptedServer> server;
  server.emplace(
      convs,
      [&convs](int n, std::string& out) {
        if (n != 1) return;
        ScriptedConv& c = convs["sg_q"];
        c.Store(1);
        Push(out, "sg_q", c, 1);
      },
      // MAX_SEQS 1 fixes the start, 2 follows the SUBSCRIBE answer; seq 2 is
      // stored once both are answered, and never pushed.
      [&convs](int n) {
        if (n == 2) convs["sg_q"].Store(2);
      });
  {
    seqd::client::ClientOptions o = Options(server->port());
    o.resync_every = 300ms;
    seqd::client::Client client(o);
    REQUIRE(client.Subscribe({"sg_q"}, inbox.OnMessage(), inbox.OnLost()).ok());
    CHECK(inbox.Wait([&] { return inbox.messages.size() >= 2; }));
  }
  server.reset();
  CHECK(Seqs(inbox) == std::vector<int64_t>{1, 2});
  std::lock_guard<std::mutex> l(inbox.mu);
  CHECK(inbox.lost.empty());
}

TEST_CASE("resubscribe: resync_every < 0 is refused") {
  seqd::client::ClientOptions o = Options(1);
  o.resync_every = std::chrono::milliseconds(-1);
  CHECK_THROWS_AS(seqd::client::Client{o}, std::invalid_argument);
}

// Subscription handles on the client's one connection (the scripted server
// accepts one): two subscriptions of one conversation, each from its own
// start (a given seq: what exists is pulled first; now); a removal stops
// one of them while the other goes on, and only the last holder's removal
// unsubscribes at the server.
TEST_CASE("subscriptions: two handles share a conversation, each from its own start") {
  std::map<std::string, ScriptedConv> convs;
  for (int64_t s = 1; s <= 3; ++s) convs["sg_m"].Store(s);
  Inbox a_inbox, b_inbox;
  std::optional<ScriptedServer> server;
  server.emplace(convs, [&convs](int n, std::string& out) {
    ScriptedConv& c = convs["sg_m"];
    if (n <= 3) {
      c.Store(c.max + 1);  // 4 at A's SUBSCRIBE, 5 at B's, 6 at B's second
      Push(out, "sg_m", c, c.max);
    }
  });
  {
    seqd::client::Client client(Options(server->port()));
    std::unique_ptr<seqd::client::Subscription> a =
        client.NewSubscription(a_inbox.OnMessage(), a_inbox.OnLost());
    std::unique_ptr<seqd::client::Subscription> b =
        client.NewSubscription(b_inbox.OnMessage(), b_inbox.OnLost());
    REQUIRE(a->Add({"sg_m"}, {{"sg_m", 1}}).ok());
    REQUIRE(a_inbox.Wait([&] { return a_inbox.messages.size() >= 3; }));  // 2, 3 pulled; 4
    REQUIRE(b->Add({"sg_m"}).ok());                                       // from now: after 4
    REQUIRE(b_inbox.Wait([&] { return b_inbox.messages.size() >= 1; }));
    REQUIRE(a_inbox.Wait([&] { return a_inbox.messages.size() >= 4; }));
    REQUIRE(a->Remove({"sg_m"}).ok());
    CHECK(server->unsubscribes() == 0);  // B holds it still
    REQUIRE(b->Add({"sg_other"}).ok());  // its SUBSCRIBE pushes sg_m 6
    REQUIRE(b_inbox.Wait([&] { return b_inbox.messages.size() >= 2; }));
    REQUIRE(b->Remove({"sg_m", "sg_other"}).ok());
    CHECK(server->unsubscribes() == 1);
    std::this_thread::sleep_for(200ms);  // a duplicate or a late one would show by now
    // Bad arguments, and a closed subscription.
    CHECK(a->Add({"sg_a", "sg_a"}).code() == seqd::client::StatusCode::kInvalidArgument);
    CHECK(a->Add({""}).code() == seqd::client::StatusCode::kInvalidArgument);
    CHECK(a->Add({"sg_a"}, {{"sg_a", -1}}).code() == seqd::client::StatusCode::kInvalidArgument);
    a->Close();
    CHECK(a->Add({"sg_a"}).code() == seqd::client::StatusCode::kCancelled);
  }
  server.reset();
  CHECK(Seqs(a_inbox) == std::vector<int64_t>{2, 3, 4, 5});
  CHECK(Seqs(b_inbox) == std::vector<int64_t>{5, 6});
  std::lock_guard<std::mutex> l(a_inbox.mu);
  for (const auto& m : a_inbox.messages) CHECK(m.payload == "m" + std::to_string(m.seq));
  CHECK(a_inbox.lost.empty());
}

// A Subscription may outlive its client: its calls then complete at once
// with kCancelled, and destroying it is safe.
TEST_CASE("subscriptions: a handle that outlives its client") {
  std::unique_ptr<seqd::client::Subscription> sub;
  {
    seqd::client::Client client(Options(1));
    sub = client.NewSubscription([](seqd::client::Message) {});
  }
  CHECK(sub->Add({"sg_a"}).code() == seqd::client::StatusCode::kCancelled);
  CHECK(sub->Remove({"sg_a"}).code() == seqd::client::StatusCode::kCancelled);
  sub.reset();
}

// Remove ends a membership at a cut, the conversation's max seq when
// Remove asks: what was stored before is delivered even if it had not come
// yet (it is pulled), nothing stored after.
TEST_CASE("subscriptions: Remove delivers through its cut, nothing after") {
  std::map<std::string, ScriptedConv> convs;
  Inbox inbox;
  std::optional<ScriptedServer> server;
  server.emplace(convs, [&convs](int n, std::string& out) {
    ScriptedConv& c = convs["sg_r"];
    if (n == 1) {
      for (int64_t s = 1; s <= 3; ++s) c.Store(s);  // never pushed
    } else if (n == 2) {
      c.Store(4);
      Push(out, "sg_r", c, 4);
    }
  });
  {
    seqd::client::Client client(Options(server->port()));
    std::unique_ptr<seqd::client::Subscription> a =
        client.NewSubscription(inbox.OnMessage(), inbox.OnLost());
    REQUIRE(a->Add({"sg_r"}, {{"sg_r", 0}}).ok());
    REQUIRE(a->Remove({"sg_r"}).ok());
    REQUIRE(inbox.Wait([&] { return inbox.messages.size() >= 3; }));
    REQUIRE(a->Add({"sg_x"}).ok());  // its SUBSCRIBE stores and pushes sg_r 4
    std::this_thread::sleep_for(300ms);
  }
  server.reset();
  CHECK(Seqs(inbox) == std::vector<int64_t>{1, 2, 3});
}
