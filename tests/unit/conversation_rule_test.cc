// ConversationRule: the key rule applied to conversation ids (rule match,
// registered row, reserved ids), what it remembers and for how long; and
// KeyRules' catch-all rule.
#include "server/msg/conversation_rule.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>

#include "storage/memory/memory_store.h"
#include "tests/unit/test_stores.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;
using Verdict = ConversationRule::Verdict;

// Counts the key rows read, and fails them while `down`.
class CountingStore final : public ForwardingSegmentStore {
 public:
  CountingStore() : ForwardingSegmentStore(inner_) {}
  Result<KeyRow> GetKey(std::string_view key) override {
    ++reads;
    if (down) return MakeError(ErrorCode::kStoreUnavailable, "down (test)");
    return ForwardingSegmentStore::GetKey(key);
  }
  MemoryStore& rows() { return inner_; }

  std::atomic<int> reads{0};
  bool down = false;

 private:
  MemoryStore inner_;
};

KeyRules SgRules() { return KeyRules({{"sg_", 100, KeyMode::kDense}}); }

}  // namespace

TEST_CASE("conversation rule: a rule match is served without the store") {
  CountingStore store;
  ConversationRule rule(SgRules(), store);
  CHECK(rule.Check("sg_team") == Verdict::kServed);
  CHECK(rule.AskStore("sg_team").ok());
  CHECK(rule.Check("sg_") == Verdict::kAskStore);  // a prefix alone is no match
  CHECK(store.reads == 0);
}

TEST_CASE("conversation rule: no rule and no row is UNKNOWN_KEY, remembered for a second") {
  CountingStore store;
  ConversationRule rule(SgRules(), store);
  const auto t0 = ConversationRule::SteadyClock::now();
  CHECK(rule.Check("room1", t0) == Verdict::kAskStore);
  Status s = rule.AskStore("room1", t0);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().code == ErrorCode::kUnknownKey);
  CHECK(s.error().message.find("--auto-keys") != std::string::npos);
  CHECK(store.reads == 1);
  CHECK(rule.Check("room1", t0 + 900ms) == Verdict::kUnknown);
  CHECK_FALSE(rule.AskStore("room1", t0 + 900ms).ok());
  CHECK(store.reads == 1);  // answered from memory
  CHECK(rule.Check("room1", t0 + 1001ms) == Verdict::kAskStore);

  // Registered since: served once the second is over, or at once when told.
  REQUIRE(store.rows().CreateKey("room1", 10, "").ok());
  CHECK(rule.AskStore("room1", t0 + 1001ms).ok());
  CHECK(store.reads == 2);
  CHECK(rule.Check("room2", t0) == Verdict::kAskStore);
  CHECK_FALSE(rule.AskStore("room2", t0).ok());
  REQUIRE(store.rows().CreateKey("room2", 10, "").ok());
  rule.Forget("room2");
  CHECK(rule.AskStore("room2", t0 + 1ms).ok());
}

TEST_CASE("conversation rule: a registered key is served, remembered for a minute") {
  CountingStore store;
  REQUIRE(store.rows().CreateKey("order", 1000, "").ok());
  ConversationRule rule(SgRules(), store);
  const auto t0 = ConversationRule::SteadyClock::now();
  CHECK(rule.AskStore("order", t0).ok());
  CHECK(rule.Check("order", t0 + 59s) == Verdict::kServed);
  CHECK(store.reads == 1);
  // Deleted by SQL: served until the minute is over, then unknown.
  store.rows().DeleteKey("order");
  CHECK(rule.Check("order", t0 + 61s) == Verdict::kAskStore);
  CHECK(rule.AskStore("order", t0 + 61s).error().code == ErrorCode::kUnknownKey);
}

TEST_CASE("conversation rule: reserved ids, store errors, and no rules at all") {
  CountingStore store;
  ConversationRule rule(SgRules(), store);
  REQUIRE(store.rows().CreateKey("seqd.server_msg_id", 10, "").ok());
  for (const char* id : {"seqd.server_msg_id", "seqd.x"}) {
    CAPTURE(id);
    CHECK(rule.Check(id) == Verdict::kAskStore);
    CHECK(rule.AskStore(id).error().code == ErrorCode::kInvalidArgument);
  }
  CHECK(store.reads == 0);

  // A store that fails: its error, retryable, and nothing remembered.
  store.down = true;
  CHECK(rule.AskStore("room9").error().code == ErrorCode::kStoreUnavailable);
  store.down = false;
  CHECK(rule.Check("room9") == Verdict::kAskStore);

  ConversationRule open(std::nullopt, store);
  CHECK(open.Check("anything at all") == Verdict::kServed);
  CHECK(open.AskStore("anything at all").ok());
}

TEST_CASE("key rules: '*' matches every key, after every prefix rule") {
  auto any = ParseAutoKeyRule("*:100:dense");
  REQUIRE(any.ok());
  CHECK(any->prefix == kAnyKeyPrefix);
  CHECK(any->mode == KeyMode::kDense);
  const KeyRules rules({*any, {"sg_", 50, KeyMode::kSegment}, {"s", 10, KeyMode::kSegment}});
  REQUIRE(rules.Match("sg_a"));
  CHECK(rules.Match("sg_a")->prefix == "sg_");
  CHECK(rules.Match("sx")->prefix == "s");
  REQUIRE(rules.Match("room 42"));
  CHECK(rules.Match("room 42")->prefix == "*");
  CHECK(rules.Match("*")->prefix == "*");
  CHECK(rules.Match("") == nullptr);
  CHECK(rules.rules().back().prefix == "*");
  CHECK(KeyRules({{"sg_", 50}}).Match("room") == nullptr);

  CountingStore store;
  ConversationRule rule(rules, store);
  CHECK(rule.Check("any conversation id") == Verdict::kServed);
  CHECK(rule.AskStore("seqd.x").error().code == ErrorCode::kInvalidArgument);
}

}  // namespace seqd
