#include "server/msg/conversation_rule.h"

#include <utility>

#include "common/key_text.h"

namespace seqd {
namespace {

constexpr std::chrono::seconds kRegisteredFor{60};
constexpr std::chrono::seconds kUnregisteredFor{1};
// Conversations remembered at most; beyond, all are forgotten (each costs
// one read again).
constexpr size_t kMaxRemembered = 100000;

}  // namespace

ConversationRule::ConversationRule(std::optional<KeyRules> rules, SegmentStore& keys)
    : rules_(std::move(rules)), keys_(keys) {}

ConversationRule::Verdict ConversationRule::Check(std::string_view conv,
                                                  SteadyClock::time_point now) const {
  if (!rules_) return Verdict::kServed;
  if (KeyIsReserved(conv)) return Verdict::kAskStore;  // AskStore names the error
  if (rules_->Match(conv)) return Verdict::kServed;
  MutexLock lock(mu_);
  auto it = remembered_.find(std::string(conv));
  if (it == remembered_.end() || it->second.until <= now) return Verdict::kAskStore;
  return it->second.registered ? Verdict::kServed : Verdict::kUnknown;
}

Status ConversationRule::AskStore(std::string_view conv, SteadyClock::time_point now) {
  if (Status valid = ValidateClientKey(conv); !valid) return valid;
  switch (Check(conv, now)) {
    case Verdict::kServed:
      return OkStatus();
    case Verdict::kUnknown:
      return UnknownKeyError(conv);
    case Verdict::kAskStore:
      break;
  }
  Result<KeyRow> row = keys_.GetKey(conv);
  if (!row && row.error().code != ErrorCode::kUnknownKey) return row.error();
  MutexLock lock(mu_);
  RememberLocked(conv, row.ok(), now);
  if (!row) return UnknownKeyError(conv);
  return OkStatus();
}

void ConversationRule::Forget(std::string_view conv) {
  MutexLock lock(mu_);
  remembered_.erase(std::string(conv));
}

void ConversationRule::RememberLocked(std::string_view conv, bool registered,
                                      SteadyClock::time_point now) {
  if (remembered_.size() >= kMaxRemembered) remembered_.clear();
  remembered_[std::string(conv)] =
      Remembered{registered, now + (registered ? kRegisteredFor : kUnregisteredFor)};
}

}  // namespace seqd
