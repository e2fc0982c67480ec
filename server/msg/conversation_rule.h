// Which conversations a message-store write may name: the one rule for
// keys (docs/http-api.md "Keys"), as for IDs. A conversation id is served if
// it matches an auto-create rule (`auto_keys`) or is a registered key (a row
// of leaf_alloc); any other is UNKNOWN_KEY (UnknownKeyError), and so is a
// reserved one (`seqd.`: INVALID_ARGUMENT, as ValidateClientKey says).
//
// A rule match costs no I/O. A registration is read from the store and
// remembered: found, for a minute (a row deleted by SQL stops serving
// within that); not found, for a second (a flood of sends to one unknown
// conversation costs one read a second; a key created by another instance
// meanwhile is served a second later at most, one created here at once:
// Forget), as the allocator does for IDs.
//
// Thread safety: every method is safe from any thread. AskStore blocks on
// the store: call it on a database thread only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/core/key_rules.h"
#include "storage/segment_store.h"

namespace seqd {

class ConversationRule {
 public:
  using SteadyClock = std::chrono::steady_clock;

  // `rules`: none serves every conversation (a service with no key rules,
  // as in tests). `keys` (leaf_alloc) must outlive the rule.
  ConversationRule(std::optional<KeyRules> rules, SegmentStore& keys);

  enum class Verdict {
    kServed,    // a rule matches, or the store said "registered" lately
    kUnknown,   // the store said "not registered" within the last second
    kAskStore,  // AskStore decides
  };
  // Without I/O. REQUIRES: `conv` passed ValidateKeyText.
  Verdict Check(std::string_view conv, SteadyClock::time_point now = SteadyClock::now()) const
      EXCLUDES(mu_);

  // OK if `conv` is served; UnknownKeyError, INVALID_ARGUMENT for a
  // reserved id, or the store's error (kStoreUnavailable). Reads the key's
  // row (blocking) unless Check answers without it.
  Status AskStore(std::string_view conv, SteadyClock::time_point now = SteadyClock::now())
      EXCLUDES(mu_);

  // Drops what the store said about `conv` (it was just registered).
  void Forget(std::string_view conv) EXCLUDES(mu_);

 private:
  // What the store said about a conversation, and until when it holds.
  struct Remembered {
    bool registered = false;
    SteadyClock::time_point until;
  };
  void RememberLocked(std::string_view conv, bool registered, SteadyClock::time_point now)
      REQUIRES(mu_);

  const std::optional<KeyRules> rules_;
  SegmentStore& keys_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Remembered> remembered_ GUARDED_BY(mu_);
};

}  // namespace seqd
