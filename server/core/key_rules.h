// Which keys exist and how auto-created keys are born.
//
// A key (documented in docs/http-api.md "Keys") is any well-formed UTF-8
// text of 1 to kMaxKeyLength bytes with no control character (U+0000 to
// U+001F, U+007F to U+009F). Keys compare byte for byte: case, trailing
// spaces and Unicode normalization all count. Anything else is rejected
// before it reaches the store.
//
// Thread safety: immutable after construction; safe to share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace seqd {

inline constexpr size_t kMaxKeyLength = 255;

// Keys starting with this are seqd's own (today `seqd.server_msg_id`, the
// message service's server message ids, which it reserves from the store
// directly): no client may take IDs from them, see or change them.
inline constexpr std::string_view kReservedKeyPrefix = "seqd.";

// True if `key` is in the reserved namespace (kReservedKeyPrefix).
inline bool KeyIsReserved(std::string_view key) { return key.starts_with(kReservedKeyPrefix); }

// How a key hands out IDs. kSegment: Leaf's segments, buffered in memory
// (the fastest; a restart or a block that does not fit its segment skips
// IDs). kDense: every block durable before it is answered, no ID ever
// skipped (server/core/dense_allocator.h).
enum class KeyMode { kSegment, kDense };

// Keys starting with `prefix` are created on first use with `step`.
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

  // kInvalidArgument naming the problem, or OK. The text and length
  // only: conversation, user and client message ids are checked with it
  // too.
  static Status Validate(std::string_view key);

  // Validate(), and kInvalidArgument "keys starting with 'seqd.' are
  // reserved" for a reserved key: the check for every key a client names
  // (the allocator's Take, KeyRouter, KeyAdmin), so each protocol refuses
  // reserved keys as it refuses a bad key.
  static Status ValidateClientKey(std::string_view key);

  // The longest matching rule, if any.
  const AutoKeyRule* Match(std::string_view key) const;

  const std::vector<AutoKeyRule>& rules() const { return rules_; }

 private:
  std::vector<AutoKeyRule> rules_;  // sorted by prefix length, longest first
};

// The metrics `key` label of `key`: the key itself, or "auto:<prefix>" when
// `rule` (its auto-create rule, or null) made it, so auto-created keys share
// one label.
std::string KeyMetricLabel(std::string_view key, const AutoKeyRule* rule);

// Parses "prefix:step" or "prefix:step:dense" (as used by --auto-key;
// ":segment" is the default). kInvalidArgument on error.
Result<AutoKeyRule> ParseAutoKeyRule(std::string_view text);

}  // namespace seqd
