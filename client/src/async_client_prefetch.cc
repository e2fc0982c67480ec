// AsyncClient's local ID prefetch (ClientOptions::prefetch): NextIds(key, 1)
// takes one ID from a per-key cache of ranges, refilled in the background
// with NEXT_IDS(prefetch) when half empty. Callers wait in order while the
// cache is empty; a refill that fails (after its retries) fails them. On
// the strand (async_client_impl.h).
#include "async_client_impl.h"

namespace seqd::client {

int64_t AsyncClient::Impl::TakeOne(KeyCache& kc) {
  IdRange& r = kc.ranges.front();
  const int64_t id = r.first;
  if (r.first == r.last) {
    kc.ranges.pop_front();
  } else {
    ++r.first;
  }
  --kc.available;
  return id;
}

void AsyncClient::Impl::NextFromCache(std::string key,
                                      std::function<void(ClientResult<IdBatch>)> done) {
  if (closed) {
    return Deliver(std::move(done), ClientResult<IdBatch>(StatusCode::kCancelled, "client closed"));
  }
  KeyCache& kc = cache[key];
  if (kc.available > 0 && kc.waiters.empty()) {
    const int64_t id = TakeOne(kc);
    Deliver(std::move(done), ClientResult<IdBatch>(IdBatch{{IdRange{id, id}}}));
  } else {
    kc.waiters.push_back(std::move(done));
  }
  MaybeRefill(key, kc);
}

void AsyncClient::Impl::MaybeRefill(const std::string& key, KeyCache& kc) {
  if (kc.refilling) return;
  if (kc.available * 2 > options.prefetch && kc.waiters.empty()) return;
  kc.refilling = true;
  auto call = std::make_shared<Call>(strand);
  call->op = Op::kNextIds;
  call->key = key;
  call->count = static_cast<uint32_t>(options.prefetch);
  call->route_key = key;
  call->on_ids = [self = shared_from_this(), key](ClientResult<IdBatch> result) {
    self->OnRefill(key, std::move(result));
  };
  Submit(std::move(call));
}

void AsyncClient::Impl::OnRefill(const std::string& key, ClientResult<IdBatch> result) {
  auto it = cache.find(key);
  if (it == cache.end()) return;  // closed meanwhile
  KeyCache& kc = it->second;
  kc.refilling = false;
  if (!result.ok()) {
    // The refill already had its retries: the waiters get its error.
    auto waiters = std::move(kc.waiters);
    kc.waiters.clear();
    for (auto& done : waiters) {
      Deliver(std::move(done), ClientResult<IdBatch>(result.code(), result.message()));
    }
    if (kc.available == 0) cache.erase(it);
    return;
  }
  for (const IdRange& r : result->ranges) {
    kc.ranges.push_back(r);
    kc.available += r.size();
  }
  while (!kc.waiters.empty() && kc.available > 0) {
    const int64_t id = TakeOne(kc);
    Deliver(std::move(kc.waiters.front()), ClientResult<IdBatch>(IdBatch{{IdRange{id, id}}}));
    kc.waiters.pop_front();
  }
  MaybeRefill(key, kc);
}

}  // namespace seqd::client
