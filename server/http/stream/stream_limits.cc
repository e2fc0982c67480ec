#include "server/http/stream/stream_limits.h"

#include <vector>

namespace seqd {

StreamLimits::Slot::~Slot() { limits_->Release(token_, id_); }

std::unique_ptr<StreamLimits::Slot> StreamLimits::Acquire(std::string_view token,
                                                          std::function<void()> cancel,
                                                          Refusal* refusal) {
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    if (cancelled_ || cancels_.size() >= max_total_) {
      if (refusal) *refusal = Refusal::kTotal;
      return nullptr;
    }
    if (!token.empty()) {
      auto it = per_token_.find(token);
      if (it != per_token_.end() && it->second >= max_per_token_) {
        if (refusal) *refusal = Refusal::kPerToken;
        return nullptr;
      }
      if (it == per_token_.end()) it = per_token_.emplace(std::string(token), 0).first;
      ++it->second;
    }
    id = next_id_++;
    cancels_.emplace(id, std::move(cancel));
  }
  if (refusal) *refusal = Refusal::kNone;
  return std::unique_ptr<Slot>(new Slot(shared_from_this(), std::string(token), id));
}

void StreamLimits::Release(const std::string& token, uint64_t id) {
  std::function<void()> cancel;  // destroyed outside the lock
  MutexLock lock(mu_);
  if (auto it = cancels_.find(id); it != cancels_.end()) {
    cancel = std::move(it->second);
    cancels_.erase(it);
  }
  if (!token.empty()) {
    auto it = per_token_.find(token);
    if (it != per_token_.end() && --it->second == 0) per_token_.erase(it);
  }
}

void StreamLimits::CancelAll() {
  std::vector<std::function<void()>> cancels;
  {
    MutexLock lock(mu_);
    cancelled_ = true;
    for (auto& [id, fn] : cancels_) {
      if (fn) cancels.push_back(fn);
    }
  }
  for (auto& fn : cancels) fn();
}

size_t StreamLimits::held() const {
  MutexLock lock(mu_);
  return cancels_.size();
}

}  // namespace seqd
