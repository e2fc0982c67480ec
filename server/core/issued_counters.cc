#include "server/core/issued_counters.h"

#include "server/metrics/metrics.h"

namespace seqd {

IssuedCounters::IssuedCounters(Metrics* metrics, const KeyRules& rules)
    : metrics_(metrics), rules_(rules) {
  if (!metrics_) return;
  for (const AutoKeyRule& rule : rules_.rules()) {
    by_rule_.push_back(&metrics_->IdsIssued(KeyMetricLabel("", &rule)));
  }
}

prometheus::Counter* IssuedCounters::For(std::string_view key, const AutoKeyRule* rule) const {
  if (!metrics_) return nullptr;
  if (rule) return by_rule_[static_cast<size_t>(rule - rules_.rules().data())];
  const size_t hash = Hash{}(key);
  Stripe& stripe = stripes_[(hash ^ (hash >> 17)) % kStripes];
  MutexLock lock(stripe.mu);
  if (auto it = stripe.by_key.find(key); it != stripe.by_key.end()) return it->second;
  prometheus::Counter* counter = &metrics_->IdsIssued(std::string(key));
  stripe.by_key.emplace(std::string(key), counter);
  return counter;
}

}  // namespace seqd
