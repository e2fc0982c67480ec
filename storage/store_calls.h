// Call helpers for the stores that hand calls on to other stores (the
// grouped stores): each forwarded call reads as one line.
//
// Thread safety: as the stores called.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace seqd {

// `store`'s answer to `call`, or `refusal()` when `store` is null (a
// group this instance does not know). R is a Status or a Result.
template <class Store, class Refusal, class R, class... Params, class... Args>
R CallOrRefuse(Store* store, const Refusal& refusal, R (Store::*call)(Params...), Args&&... args) {
  if (store == nullptr) return refusal();
  return (store->*call)(std::forward<Args>(args)...);
}

// Calls `call` on every store in order, stopping at the first error.
template <class Store, class... Params, class... Args>
Status CallEach(const std::vector<std::unique_ptr<Store>>& stores, Status (Store::*call)(Params...),
                const Args&... args) {
  for (const auto& store : stores) {
    if (Status s = ((*store).*call)(args...); !s) return s;
  }
  return OkStatus();
}

// Runs `read(*stores[g], part)` once per group g on the keys `group_of`
// puts in g, and puts the answers back in the order of `keys`; a key whose
// group is not in `stores` answers the whole call `refusal()`.
template <class Store, class Keys, class GroupOf, class Refusal, class Read>
Result<std::vector<int64_t>> ReadByGroup(const std::vector<std::unique_ptr<Store>>& stores,
                                         const Keys& keys, const GroupOf& group_of,
                                         const Refusal& refusal, const Read& read) {
  std::vector<std::vector<size_t>> index(stores.size());
  std::vector<std::vector<std::string>> part(stores.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t g = group_of(keys[i]);
    if (g >= stores.size()) return refusal();
    index[g].push_back(i);
    part[g].push_back(keys[i]);
  }
  std::vector<int64_t> out(keys.size(), 0);
  for (size_t g = 0; g < stores.size(); ++g) {
    if (part[g].empty()) continue;
    Result<std::vector<int64_t>> got = read(*stores[g], part[g]);
    if (!got) return got;
    for (size_t j = 0; j < got->size() && j < index[g].size(); ++j) out[index[g][j]] = (*got)[j];
  }
  return out;
}

// Splits `values` by the group `group_of(value)` puts each in and runs
// `write(*stores[g], part)` once per group with any, in group order,
// stopping at the first error. A value whose group is not in `stores`
// answers `refusal()` before anything is written.
template <class Store, class Value, class GroupOf, class Refusal, class Write>
Status WriteByGroup(const std::vector<std::unique_ptr<Store>>& stores,
                    const std::vector<Value>& values, const GroupOf& group_of,
                    const Refusal& refusal, const Write& write) {
  std::vector<std::vector<Value>> part(stores.size());
  for (const Value& v : values) {
    const size_t g = group_of(v);
    if (g >= stores.size()) return refusal();
    part[g].push_back(v);
  }
  for (size_t g = 0; g < stores.size(); ++g) {
    if (part[g].empty()) continue;
    if (Status s = write(*stores[g], part[g]); !s) return s;
  }
  return OkStatus();
}

}  // namespace seqd
