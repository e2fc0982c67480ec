// MessageService over the in-memory stores: stamping, idempotency, bounds,
// read seqs, push, failures and shutdown.
#include "server/msg/message_service.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"

namespace seqd {
namespace {

// "prefix" + n, spelled so GCC 12 does not warn (-Wrestrict false positive).
std::string Id(std::string prefix, int n) {
  prefix += std::to_string(n);
  return prefix;
}

// Runs an async service call and waits for its answer.
template <typename T, typename F>
Result<T> Wait(F&& call) {
  std::promise<Result<T>> p;
  auto f = p.get_future();
  call([&p](Result<T> r) { p.set_value(std::move(r)); });
  return f.get();
}

struct Fixture {
  MemoryMessageStore store;
  MemoryStore ids;
  std::unique_ptr<MessageService> service;

  explicit Fixture(MessageServiceOptions options = {}) {
    service = std::make_unique<MessageService>(store, ids, options);
  }

  Result<AppendOutcome> Send(std::string conv, std::string sender, std::string cmid,
                             std::string payload = "hi") {
    return Wait<AppendOutcome>([&](auto done) {
      service->Send({std::move(conv), std::move(sender), std::move(cmid), 1, std::move(payload)},
                    std::move(done));
    });
  }
  Result<MessagePage> Pull(PullRequest r) {
    return Wait<MessagePage>([&](auto done) { service->Pull(std::move(r), std::move(done)); });
  }
  Result<MemberView> SetMember(std::string conv, std::string user, std::optional<int64_t> min,
                               std::optional<int64_t> max, bool clear_max = false) {
    return Wait<MemberView>(
        [&](auto done) { service->SetMember(conv, user, min, max, clear_max, std::move(done)); });
  }
  Result<MemberView> MarkRead(std::string conv, std::string user, int64_t seq) {
    return Wait<MemberView>(
        [&](auto done) { service->MarkRead(conv, user, seq, std::move(done)); });
  }
};

std::vector<int64_t> Seqs(const MessagePage& page) {
  std::vector<int64_t> out;
  for (const StoredMessage& m : page.messages) out.push_back(m.seq);
  return out;
}

TEST_CASE("concurrent senders to one conversation get seqs 1..N, contiguous and unique") {
  Fixture f;
  constexpr int kThreads = 8, kPerThread = 150;
  std::mutex mu;
  std::vector<int64_t> all;
  std::set<int64_t> server_ids;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int64_t last = 0;
      for (int i = 0; i < kPerThread; ++i) {
        auto r = f.Send("sg_room", Id("u", t), Id("c", i));
        if (!r || r->duplicate || r->seq <= last) {
          ++failures;
          continue;
        }
        last = r->seq;
        std::lock_guard lock(mu);
        all.push_back(r->seq);
        server_ids.insert(r->server_msg_id);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == kThreads * kPerThread);
  for (size_t i = 0; i < all.size(); ++i) REQUIRE(all[i] == static_cast<int64_t>(i + 1));
  CHECK(server_ids.size() == all.size());
  // Group commit: far fewer transactions than messages (each thread waits for
  // its answer, so at most kThreads messages queue per transaction).
  CHECK(f.store.append_calls() < all.size());
}

TEST_CASE("a re-send gets the original answer and stores nothing new") {
  Fixture f;
  auto first = f.Send("si_a_b", "alice", "m1", "hello");
  REQUIRE(first.ok());
  CHECK(first->seq == 1);
  CHECK_FALSE(first->duplicate);
  auto again = f.Send("si_a_b", "alice", "m1", "hello");
  REQUIRE(again.ok());
  CHECK(again->duplicate);
  CHECK(again->seq == first->seq);
  CHECK(again->server_msg_id == first->server_msg_id);
  CHECK(again->send_time_ms == first->send_time_ms);
  auto next = f.Send("si_a_b", "bob", "m1");  // another sender's "m1" is a new message
  REQUIRE(next.ok());
  CHECK(next->seq == 2);
  auto page = f.Pull({.conv_id = "si_a_b"});
  REQUIRE(page.ok());
  CHECK(Seqs(*page) == std::vector<int64_t>{1, 2});
  CHECK(page->messages[0].payload == "hello");
}

TEST_CASE("senders racing with other contents under one client id: one message, the rest refused") {
  Fixture f;
  constexpr int kThreads = 8, kRounds = 40;
  std::vector<std::thread> threads;
  std::mutex mu;
  // Per round: what each sender was told.
  std::vector<std::vector<Result<AppendOutcome>>> told(kRounds);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        // Even threads send one content, odd threads each their own.
        const std::string payload = t % 2 == 0 ? "same" : Id("own", t);
        auto r = f.Send("sg_race", "alice", Id("m", round), payload);
        std::lock_guard lock(mu);
        told[round].push_back(std::move(r));
      }
    });
  }
  for (auto& t : threads) t.join();
  auto page = f.Pull({.conv_id = "sg_race", .limit = 1000});
  REQUIRE(page.ok());
  REQUIRE(page->messages.size() == kRounds);
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    const StoredMessage& stored = page->messages[round];
    CHECK(stored.client_msg_id == Id("m", round));
    int fresh = 0;
    for (const Result<AppendOutcome>& r : told[round]) {
      if (!r.ok()) {
        // Refused: only a sender whose content is not the stored one.
        CHECK(r.error().code == ErrorCode::kMessageIdConflict);
        continue;
      }
      CHECK(r->seq == stored.seq);
      CHECK(r->server_msg_id == stored.server_msg_id);
      fresh += r->duplicate ? 0 : 1;
    }
    CHECK(fresh == 1);
    // Everyone sending the stored content was answered its seq; every other
    // sender was refused.
    const bool same_won = stored.payload == "same";
    const int told_ok = static_cast<int>(
        std::count_if(told[round].begin(), told[round].end(), [](auto& r) { return r.ok(); }));
    CHECK(told_ok == (same_won ? kThreads / 2 : 1));
  }
}

TEST_CASE("with key rules, writes to a conversation follow them as IDs do; reads do not") {
  MessageServiceOptions o;
  o.key_rules = KeyRules({{"sg_", 100, KeyMode::kDense}});
  Fixture f(o);
  CHECK(f.Send("sg_team", "u", "1").ok());
  auto unknown = f.Send("room1", "u", "1");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownKey);
  CHECK(unknown.error().message.starts_with("unknown key 'room1': "));
  auto reserved = f.Send("seqd.server_msg_id", "u", "1");
  REQUIRE_FALSE(reserved.ok());
  CHECK(reserved.error().code == ErrorCode::kInvalidArgument);
  CHECK(f.SetMember("room1", "bob", std::nullopt, std::nullopt).error().code ==
        ErrorCode::kUnknownKey);
  CHECK(Wait<int64_t>([&](auto done) { f.service->SetConvMinSeq("room1", 1, std::move(done)); })
            .error()
            .code == ErrorCode::kUnknownKey);
  // Reads answer as for any conversation without messages.
  auto page = f.Pull({.conv_id = "room1"});
  REQUIRE(page.ok());
  CHECK(page->messages.empty());
  // Registered (POST /admin/keys tells the service): served at once.
  REQUIRE(f.ids.CreateKey("room1", 10, "").ok());
  f.service->OnKeyCreated("room1");
  auto sent = f.Send("room1", "u", "1");
  REQUIRE(sent.ok());
  CHECK(sent->seq == 1);
  CHECK(f.SetMember("room1", "bob", std::nullopt, std::nullopt).ok());
  CHECK(f.store.append_calls() == 2);  // nothing refused reached the store
}

TEST_CASE("bad input is refused with a clear error") {
  MessageServiceOptions o;
  o.max_payload_bytes = 10;
  Fixture f(o);
  auto big = f.Send("c1", "u", "m", std::string(11, 'x'));
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == ErrorCode::kTooLarge);
  CHECK(big.error().message.find("limit is 10") != std::string::npos);
  CHECK(f.Send("c1", "u", "m", std::string(10, 'x')).ok());
  const std::string too_long(256, 'a');
  using Ids = std::tuple<std::string, std::string, std::string>;
  for (const auto& [conv, sender, cmid] :
       {Ids{"", "u", "m"}, Ids{"c\t1", "u", "m"}, Ids{"c1", "", "m"}, Ids{"c1", "u", "m\x7f"},
        Ids{"c1", "u", too_long}}) {
    auto r = f.Send(conv, sender, cmid);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
  }
  auto bad_conv = f.Send("c\t1", "u", "m");
  CHECK(bad_conv.error().message.find("conv_id") != std::string::npos);
  for (PullRequest r : {PullRequest{.conv_id = "c1", .from_seq = 0},
                        PullRequest{.conv_id = "c1", .from_seq = 5, .to_seq = 4},
                        PullRequest{.conv_id = "c1", .limit = 0},
                        PullRequest{.conv_id = "c1", .limit = kMaxPullLimit + 1}}) {
    auto page = f.Pull(r);
    REQUIRE_FALSE(page.ok());
    CHECK(page.error().code == ErrorCode::kInvalidArgument);
  }
  auto many = Wait<std::vector<int64_t>>([&](auto done) {
    f.service->MaxSeqs(std::vector<std::string>(kMaxListItems + 1, "c1"), std::move(done));
  });
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().code == ErrorCode::kTooLarge);
}

TEST_CASE("pulls: ranges, order, limit and is_end; by seqs") {
  Fixture f;
  for (int i = 1; i <= 10; ++i) REQUIRE(f.Send("c", "u", Id("m", i)).ok());
  auto page = f.Pull({.conv_id = "c", .from_seq = 3, .to_seq = 7, .limit = 3});
  REQUIRE(page.ok());
  CHECK(Seqs(*page) == std::vector<int64_t>{3, 4, 5});
  CHECK(page->more);
  page = f.Pull({.conv_id = "c", .from_seq = 3, .to_seq = 7, .limit = 5});
  CHECK(Seqs(*page) == std::vector<int64_t>{3, 4, 5, 6, 7});
  CHECK_FALSE(page->more);
  page = f.Pull({.conv_id = "c", .limit = 4, .descending = true});  // "load earlier" from the top
  CHECK(Seqs(*page) == std::vector<int64_t>{10, 9, 8, 7});
  CHECK(page->more);
  page = f.Pull({.conv_id = "c", .from_seq = 11});
  CHECK(page->messages.empty());
  CHECK_FALSE(page->more);
  auto by_seqs = Wait<std::vector<StoredMessage>>([&](auto done) {
    f.service->PullSeqs("c", {9, 2, 2, 42}, std::nullopt, std::move(done));
  });
  REQUIRE(by_seqs.ok());
  REQUIRE(by_seqs->size() == 2);
  CHECK((*by_seqs)[0].seq == 2);
  CHECK((*by_seqs)[1].seq == 9);
}

TEST_CASE("member windows clamp pulls; the conversation min seq hides history") {
  Fixture f;
  for (int i = 1; i <= 5; ++i) REQUIRE(f.Send("g", "u", Id("a", i)).ok());
  auto joined = f.SetMember("g", "carol", std::nullopt, std::nullopt);  // joins now
  REQUIRE(joined.ok());
  CHECK(joined->state.min_seq == 6);
  CHECK(joined->state.read_seq == 5);
  CHECK_FALSE(joined->state.max_seq.has_value());
  for (int i = 6; i <= 9; ++i) REQUIRE(f.Send("g", "u", Id("a", i)).ok());
  auto page = f.Pull({.conv_id = "g", .user_id = "carol"});
  CHECK(Seqs(*page) == std::vector<int64_t>{6, 7, 8, 9});
  auto left = f.SetMember("g", "carol", std::nullopt, 8);  // kicked at 8
  REQUIRE(left.ok());
  page = f.Pull({.conv_id = "g", .from_seq = 1, .to_seq = 100, .user_id = "carol"});
  CHECK(Seqs(*page) == std::vector<int64_t>{6, 7, 8});
  auto not_member = f.Pull({.conv_id = "g", .user_id = "dave"});
  REQUIRE_FALSE(not_member.ok());
  CHECK(not_member.error().code == ErrorCode::kNotFound);

  auto min = Wait<int64_t>([&](auto done) { f.service->SetConvMinSeq("g", 4, std::move(done)); });
  REQUIRE(min.ok());
  page = f.Pull({.conv_id = "g"});
  CHECK(Seqs(*page).front() == 4);
  auto rejoined = f.SetMember("g", "carol", 2, std::nullopt, /*clear_max=*/true);
  REQUIRE(rejoined.ok());
  CHECK_FALSE(rejoined->state.max_seq.has_value());
  page = f.Pull({.conv_id = "g", .user_id = "carol"});
  CHECK(Seqs(*page).front() == 4);  // the conversation's min wins over the member's
}

TEST_CASE("read seq never decreases and never passes the max") {
  Fixture f;
  for (int i = 1; i <= 5; ++i) REQUIRE(f.Send("g", "bob", Id("b", i)).ok());
  REQUIRE(f.SetMember("g", "amy", 1, std::nullopt).ok());
  auto r = f.MarkRead("g", "amy", 3);
  REQUIRE(r.ok());
  CHECK(r->state.read_seq == 3);
  auto back = f.MarkRead("g", "amy", 2);
  REQUIRE_FALSE(back.ok());
  CHECK(back.error().code == ErrorCode::kFailedPrecondition);
  auto above = f.MarkRead("g", "amy", 6);
  REQUIRE_FALSE(above.ok());
  CHECK(above.error().code == ErrorCode::kFailedPrecondition);
  CHECK(f.MarkRead("g", "amy", 3).ok());  // unchanged is fine
  REQUIRE(f.SetMember("g", "amy", std::nullopt, 4).ok());
  CHECK_FALSE(f.MarkRead("g", "amy", 5).ok());  // above her max_seq
  CHECK(f.MarkRead("g", "amy", 4).ok());
  auto stranger = f.MarkRead("g", "zed", 1);
  REQUIRE_FALSE(stranger.ok());
  CHECK(stranger.error().code == ErrorCode::kNotFound);
  CHECK(f.MarkRead("g", "amy", -1).error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("login sync: max, read and unread per conversation; own messages are not unread") {
  Fixture f;
  REQUIRE(f.Send("c1", "bob", "1").ok());
  REQUIRE(f.Send("c1", "amy", "2").ok());
  REQUIRE(f.Send("c1", "bob", "3").ok());
  REQUIRE(f.Send("c2", "bob", "1").ok());
  REQUIRE(f.SetMember("c1", "amy", 1, std::nullopt).ok());
  auto sync = Wait<std::vector<ConvSync>>([&](auto done) {
    f.service->SyncUser("amy", {"c1", "c2", "c3"}, std::move(done));
  });
  REQUIRE(sync.ok());
  REQUIRE(sync->size() == 3);
  CHECK((*sync)[0].max_seq == 3);
  CHECK((*sync)[0].unread == 2);  // seqs 1 and 3; 2 is amy's own
  CHECK((*sync)[0].member);
  CHECK((*sync)[1].max_seq == 1);
  CHECK((*sync)[1].unread == 1);
  CHECK_FALSE((*sync)[1].member);
  CHECK((*sync)[2].max_seq == 0);
  CHECK((*sync)[2].unread == 0);
  REQUIRE(f.MarkRead("c1", "amy", 3).ok());
  sync = Wait<std::vector<ConvSync>>(
      [&](auto done) { f.service->SyncUser("amy", {"c1"}, std::move(done)); });
  CHECK((*sync)[0].unread == 0);
  CHECK((*sync)[0].read_seq == 3);
}

TEST_CASE("recall and delete leave tombstones; seqs stay contiguous") {
  Fixture f;
  for (int i = 1; i <= 3; ++i) REQUIRE(f.Send("c", "u", std::to_string(i), "secret").ok());
  auto recalled = Wait<StoredMessage>(
      [&](auto done) { f.service->SetStatus("c", 2, MessageStatus::kRecalled, std::move(done)); });
  REQUIRE(recalled.ok());
  CHECK(recalled->status == MessageStatus::kRecalled);
  CHECK(recalled->payload.empty());
  auto missing = Wait<StoredMessage>(
      [&](auto done) { f.service->SetStatus("c", 9, MessageStatus::kDeleted, std::move(done)); });
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kNotFound);
  auto page = f.Pull({.conv_id = "c"});
  CHECK(Seqs(*page) == std::vector<int64_t>{1, 2, 3});
  CHECK(page->messages[1].status == MessageStatus::kRecalled);
  CHECK(f.Send("c", "u", "4").value().seq == 4);
}

TEST_CASE("subscribers receive committed messages in seq order until unsubscribed") {
  Fixture f;
  std::mutex mu;
  std::vector<int64_t> got;
  auto sub = f.service->Subscribe({"c", "c"}, [&](const StoredMessage& m) {
    std::lock_guard lock(mu);
    got.push_back(m.seq);
  });
  REQUIRE(sub.ok());
  for (int i = 1; i <= 20; ++i) REQUIRE(f.Send("c", "u", std::to_string(i)).ok());
  REQUIRE(f.Send("other", "u", "x").ok());
  REQUIRE(f.Send("c", "u", "1").value().duplicate);  // a re-send is not pushed again
  {
    std::lock_guard lock(mu);
    REQUIRE(got.size() == 20);  // once each, though subscribed twice
    for (int i = 0; i < 20; ++i) CHECK(got[i] == i + 1);
  }
  sub->reset();
  REQUIRE(f.Send("c", "u", "21").ok());
  std::lock_guard lock(mu);
  CHECK(got.size() == 20);
  CHECK_FALSE(f.service->Subscribe({"bad\tid"}, [](const StoredMessage&) {}).ok());
}

TEST_CASE("store down: sends fail, nothing is acknowledged, and no hole appears after") {
  Fixture f;
  REQUIRE(f.Send("c", "u", "1").ok());
  f.store.SetAvailable(false);
  auto failed = f.Send("c", "u", "2");
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == ErrorCode::kStoreUnavailable);
  f.store.SetAvailable(true);
  auto retried = f.Send("c", "u", "2");
  REQUIRE(retried.ok());
  CHECK(retried->seq == 2);
  CHECK_FALSE(retried->duplicate);
}

TEST_CASE("shutdown answers queued sends and refuses new ones") {
  Fixture f;
  f.service->Shutdown();
  auto r = f.Send("c", "u", "1");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kShuttingDown);
}

}  // namespace
}  // namespace seqd
