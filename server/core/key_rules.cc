#include "server/core/key_rules.h"

#include <algorithm>
#include <charconv>

#include "common/utf8.h"

namespace seqd {

std::vector<AutoKeyRule> DefaultAutoKeyRules() {
  return {{"si_", 50, KeyMode::kDense},
          {"g_", 100, KeyMode::kDense},
          {"sg_", 100, KeyMode::kDense},
          {"sn_", 50, KeyMode::kDense},
          {"n_", 50, KeyMode::kDense}};
}

namespace {

bool MatchesAnyKey(const AutoKeyRule& rule) { return rule.prefix == kAnyKeyPrefix; }

}  // namespace

KeyRules::KeyRules(std::vector<AutoKeyRule> rules) : rules_(std::move(rules)) {
  std::stable_sort(rules_.begin(), rules_.end(), [](const AutoKeyRule& a, const AutoKeyRule& b) {
    if (MatchesAnyKey(a) != MatchesAnyKey(b)) return MatchesAnyKey(b);
    return a.prefix.size() > b.prefix.size();
  });
}

const AutoKeyRule* KeyRules::Match(std::string_view key) const {
  for (const AutoKeyRule& rule : rules_) {
    if (MatchesAnyKey(rule)) return key.empty() ? nullptr : &rule;
    if (key.size() > rule.prefix.size() && key.substr(0, rule.prefix.size()) == rule.prefix) {
      return &rule;
    }
  }
  return nullptr;
}

Result<AutoKeyRule> ParseAutoKeyRule(std::string_view full) {
  std::string_view text = full;
  KeyMode mode = KeyMode::kSegment;
  for (auto [suffix, m] : {std::pair{std::string_view(":dense"), KeyMode::kDense},
                           std::pair{std::string_view(":segment"), KeyMode::kSegment}}) {
    if (text.ends_with(suffix)) {
      text.remove_suffix(suffix.size());
      mode = m;
      break;
    }
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "expected PREFIX:STEP[:dense], got '" + std::string(full) + "'");
  }
  AutoKeyRule rule;
  rule.mode = mode;
  rule.prefix = std::string(text.substr(0, colon));
  std::string_view step = text.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(step.data(), step.data() + step.size(), rule.step);
  if (ec != std::errc() || ptr != step.data() + step.size() || rule.step < 1 ||
      rule.step > 1'000'000'000) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "step in '" + std::string(text) + "' must be an integer in [1, 1000000000]");
  }
  if (auto s = ValidateKeyText(rule.prefix); !s) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "prefix in '" + std::string(text) + "': " + s.error().message);
  }
  return rule;
}

Error UnknownKeyError(std::string_view key) {
  return MakeError(ErrorCode::kUnknownKey,
                   "unknown key '" + std::string(key) +
                       "': it is not registered and no auto-create rule matches it; register it "
                       "(POST /admin/keys) or start seqd with a rule for its prefix "
                       "(--auto-keys PREFIX:STEP[:dense])");
}

std::string KeyMetricLabel(std::string_view key, const AutoKeyRule* rule) {
  if (rule) return "auto:" + rule->prefix;
  return std::string(key);
}

}  // namespace seqd
