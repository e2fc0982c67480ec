// Which keys exist and how auto-created keys are born. What a key's text may
// be is common/key_text.h.
//
// Thread safety: immutable after construction; safe to share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/key_text.h"

namespace seqd {

// How a key hands out IDs. kSegment: Leaf's segments, buffered in memory
// (the fastest; a restart or a block that does not fit its segment skips
// IDs). kDense: every block durable before it is answered, no ID ever
// skipped (server/core/dense_allocator.h).
enum class KeyMode { kSegment, kDense };

// The prefix of a rule that matches every key (`--auto-keys '*:100:dense'`).
inline constexpr std::string_view kAnyKeyPrefix = "*";

// Keys starting with `prefix` (every key for kAnyKeyPrefix) are served
// without a row of their own: created on first use with `step`.
struct AutoKeyRule {
  std::string prefix;
  int64_t step = 0;
  KeyMode mode = KeyMode::kSegment;
};

// OpenIM's conversation id prefixes, all dense (a conversation's seqs have
// no hole): single chat (si_), group (g_, sg_), notification (sn_, n_).
std::vector<AutoKeyRule> DefaultAutoKeyRules();

class KeyRules {
 public:
  explicit KeyRules(std::vector<AutoKeyRule> rules = {});

  // The longest matching prefix rule, else the kAnyKeyPrefix rule, if any.
  const AutoKeyRule* Match(std::string_view key) const;

  const std::vector<AutoKeyRule>& rules() const { return rules_; }

 private:
  // Sorted by prefix length, longest first; a kAnyKeyPrefix rule last.
  std::vector<AutoKeyRule> rules_;
};

// The metrics `key` label of `key`: the key itself, or "auto:<prefix>" when
// `rule` (its auto-create rule, or null) made it, so auto-created keys share
// one label.
std::string KeyMetricLabel(std::string_view key, const AutoKeyRule* rule);

// kUnknownKey for `key`, a key or conversation id that is neither a row of
// the store nor matched by a rule: the one text every interface answers,
// saying how to make such a key served (it names no rule, row or table).
Error UnknownKeyError(std::string_view key);

// Parses "prefix:step" or "prefix:step:dense" (as used by --auto-keys;
// ":segment" is the default; a prefix of "*" matches every key).
// kInvalidArgument on error.
Result<AutoKeyRule> ParseAutoKeyRule(std::string_view text);

}  // namespace seqd
