// The client's message store calls and subscriptions against the real
// BinaryServer and MessageService (in-process, see message_world.h).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <optional>
#include <thread>

#include "seqd/client.h"
#include "seqd/receive_queue.h"
#include "tests/client/message_test_support.h"
#include "tests/client/real/message_world.h"

using namespace std::chrono_literals;
using namespace seqd::clienttest;

// a + b, spelled so GCC 12 raises no false -Wrestrict on it.
inline std::string Cat(std::string a, const std::string& b) {
  a += b;
  return a;
}

TEST_CASE("client messages: every call against the real server") {
  MessageWorld w;
  seqd::client::Client c(Options(w.port()));
  for (int i = 1; i <= 5; ++i) {
    auto r = c.Send(Out("sg_cl", Cat("m", std::to_string(i)), Cat("body", std::to_string(i))));
    REQUIRE_MESSAGE(r.ok(), r.ToString());
    CHECK(r->seq == i);
    CHECK_FALSE(r->duplicate);
  }
  auto dup = c.Send(Out("sg_cl", "m2", "body2"));
  REQUIRE(dup);
  CHECK(dup->seq == 2);
  CHECK(dup->duplicate);
  // Another payload under the used client id: another message, refused
  // with a status of its own (and not retried).
  auto other = c.Send(Out("sg_cl", "m2", "another body"));
  CHECK(other.code() == seqd::client::StatusCode::kMessageIdConflict);
  CHECK(other.ToString().starts_with("MESSAGE_ID_CONFLICT: "));

  auto page = c.PullRange("sg_cl");
  REQUIRE(page);
  CHECK(page->is_end);
  REQUIRE(page->messages.size() == 5);
  CHECK(page->messages[0].conv_id == "sg_cl");
  CHECK(page->messages[0].payload == "body1");
  CHECK(page->messages[0].content_type == 7);
  seqd::client::PullOptions desc;
  desc.descending = true;
  desc.limit = 2;
  desc.to_seq = 5;
  auto d = c.PullRange("sg_cl", desc);
  REQUIRE(d);
  CHECK_FALSE(d->is_end);
  CHECK(d->messages.size() == 2);
  CHECK(d->messages[0].seq == 5);

  auto seqs = c.PullSeqs("sg_cl", {4, 2, 99});
  REQUIRE(seqs);
  REQUIRE(seqs->size() == 2);
  CHECK((*seqs)[0].seq == 2);

  auto max = c.MaxSeqs({"sg_cl", "sg_empty"});
  REQUIRE(max);
  CHECK(*max == std::vector<int64_t>{5, 0});

  auto member = c.SetMember("sg_cl", "u2", 2);
  REQUIRE_MESSAGE(member.ok(), member.ToString());
  CHECK(member->min_seq == 2);
  CHECK(member->read_seq == 1);
  CHECK(c.GetMember("sg_cl", "u2").value() == *member);
  CHECK(c.GetMember("sg_cl", "nobody").code() == seqd::client::StatusCode::kNotFound);
  auto read = c.MarkRead("sg_cl", "u2", 3);
  REQUIRE(read);
  CHECK(read->read_seq == 3);
  CHECK(c.MarkRead("sg_cl", "u2", 1).code() == seqd::client::StatusCode::kFailedPrecondition);
  auto sync = c.SyncUser("u2", {"sg_cl"});
  REQUIRE(sync);
  REQUIRE(sync->size() == 1);
  CHECK((*sync)[0].max_seq == 5);
  CHECK((*sync)[0].unread == 2);
  CHECK((*sync)[0].member);

  auto recalled = c.SetStatus("sg_cl", 3, seqd::client::MessageStatus::kRecalled);
  REQUIRE(recalled);
  CHECK(recalled->status == seqd::client::MessageStatus::kRecalled);
  CHECK(recalled->payload.empty());
  CHECK(c.SetStatus("sg_cl", 3, seqd::client::MessageStatus::kNormal).code() ==
        seqd::client::StatusCode::kInvalidArgument);
  CHECK(c.SetConvMinSeq("sg_cl", 2).value() == 2);

  // Errors are answered, not retried, and named.
  auto big = c.Send(Out("sg_cl", "big", std::string(70 * 1024, 'x')));
  CHECK(big.code() == seqd::client::StatusCode::kTooLarge);
  CHECK(seqd::client::StatusCodeName(big.code()) == "TOO_LARGE");
  CHECK(c.Send(Out("bad\tid!", "x", "x")).code() == seqd::client::StatusCode::kInvalidArgument);
  seqd::client::PullOptions zero;
  zero.limit = 0;
  CHECK(c.PullRange("sg_cl", zero).code() == seqd::client::StatusCode::kInvalidArgument);
  CHECK(c.Send(Out("sg_cl", "huge", std::string(2 << 20, 'x'))).code() ==
        seqd::client::StatusCode::kTooLarge);  // refused by the client: above the frame limit
  // The connection survived all of that.
  CHECK(c.Send(Out("sg_cl", "m6", "six"))->seq == 6);
}

TEST_CASE("client messages: a send whose commit outcome was lost is resent, stored once") {
  MessageWorld w;
  seqd::client::Client c(Options(w.port()));
  // The server's writer tries a batch three times: all three commit but
  // report STORE_UNAVAILABLE, so the client sees it and resends by itself
  // with the same client_msg_id.
  w.LoseNextCommits(3);
  auto r = c.Send(Out("sg_lost", "m1", "body1"));
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  CHECK(r->seq == 1);
  CHECK(r->duplicate);  // the resend found the first try's message
  auto next = c.Send(Out("sg_lost", "m2", "body2"));
  REQUIRE(next);
  CHECK(next->seq == 2);
  CHECK_FALSE(next->duplicate);
  auto page = c.PullRange("sg_lost");
  REQUIRE(page);
  REQUIRE(page->messages.size() == 2);
  CHECK(page->messages[0].client_msg_id == "m1");
  CHECK(page->messages[1].client_msg_id == "m2");
}

TEST_CASE("client messages: subscribe, pushes in order into a ReceiveQueue, unsubscribe") {
  MessageWorld w;
  seqd::client::Client sub(Options(w.port()));
  seqd::client::Client sender(Options(w.port()));
  Inbox inbox;
  REQUIRE(sub.Subscribe({"sg_s1", "sg_s2"}, inbox.OnMessage(), inbox.OnLost()).ok());
  constexpr int kEach = 40;
  for (int i = 0; i < kEach; ++i) {
    REQUIRE(sender.Send(Out("sg_s1", Cat("a", std::to_string(i)), "x")));
    REQUIRE(sender.Send(Out("sg_s2", Cat("b", std::to_string(i)), "y")));
  }
  REQUIRE(inbox.Wait([&] { return inbox.messages.size() == 2 * kEach; }));
  std::vector<seqd::client::Message> delivered;
  seqd::client::ReceiveQueue queue(
      [&](const seqd::client::Message& m) { delivered.push_back(m); },
      [&](const std::string&, int64_t, int64_t) { FAIL("no gap expected"); });
  {
    std::lock_guard<std::mutex> l(inbox.mu);
    for (const auto& m : inbox.messages) queue.Offer(m);
  }
  CHECK(delivered.size() == 2 * kEach);
  CHECK(queue.local_seq("sg_s1") == kEach);
  CHECK(queue.local_seq("sg_s2") == kEach);

  REQUIRE(sub.Unsubscribe({"sg_s1"}).ok());
  REQUIRE(sender.Send(Out("sg_s1", "after", "x")));
  REQUIRE(sender.Send(Out("sg_s2", "after", "y")));
  REQUIRE(inbox.Wait([&] { return inbox.messages.size() == 2 * kEach + 1; }));
  std::this_thread::sleep_for(100ms);
  std::lock_guard<std::mutex> l(inbox.mu);
  CHECK(inbox.messages.size() == 2 * kEach + 1);
  CHECK(inbox.messages.back().conv_id == "sg_s2");
  CHECK(inbox.lost.empty());
}

TEST_CASE("client messages: subscriptions are reported lost when the connection goes") {
  Inbox inbox;
  std::optional<seqd::client::Client> sub;
  {
    MessageWorld w;
    sub.emplace(Options(w.port()));
    REQUIRE(sub->Subscribe({"sg_l1", "sg_l2"}, inbox.OnMessage(), inbox.OnLost()).ok());
  }  // the server drains and closes the connection
  REQUIRE(inbox.Wait([&] { return !inbox.lost.empty(); }));
  std::lock_guard<std::mutex> l(inbox.mu);
  CHECK(inbox.lost[0].first == std::vector<std::string>{"sg_l1", "sg_l2"});
  CHECK_FALSE(inbox.lost[0].second.empty());
}
