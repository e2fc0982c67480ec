// The IDs-issued counters (seqd_ids_issued_total{key}) the allocator adds
// to: one per auto-create rule (its keys share a label), made at
// construction, and one per key no rule matches, made when the store first
// confirms the key and found again by name. Keys keep no pointer to their
// counter (8 bytes each: a million keys are held at once).
//
// Thread safety: For() from any thread; keys' own counters are found under
// one of 64 mutexes, by the key's hash (takes through a key's lock report,
// so one mutex for all keys would be shared by every thread). Counters
// live as long as the Metrics they came from.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/core/key_rules.h"

namespace prometheus {
class Counter;
}  // namespace prometheus

namespace seqd {

class Metrics;

class IssuedCounters {
 public:
  // `rules` must outlive this; `metrics` may be null (then For() is null).
  IssuedCounters(Metrics* metrics, const KeyRules& rules);

  // The counter of `key`, whose rule is `rule` (rules.Match(key), or
  // null): the rule's, else the key's own, made on the first call.
  // REQUIRES: a key no rule matches was confirmed by the store (its series
  // must not exist before). Null without metrics.
  prometheus::Counter* For(std::string_view key, const AutoKeyRule* rule) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  Metrics* const metrics_;
  const KeyRules& rules_;
  struct Stripe {
    Mutex mu;
    std::unordered_map<std::string, prometheus::Counter*, Hash, std::equal_to<>> by_key
        GUARDED_BY(mu);
  };
  static constexpr size_t kStripes = 64;

  std::vector<prometheus::Counter*> by_rule_;  // rules_.rules()[i]'s, when metrics_
  mutable std::array<Stripe, kStripes> stripes_;
};

}  // namespace seqd
