// What the stores' batch reads (GetMaxIds, GetMinSeqs, GetUserSeqs) answer:
// one value per key asked, in the order asked.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seqd {

// The value `found` (a map from std::string) holds for each of `keys`, in
// their order; `missing` for a key it lacks.
template <typename Map>
std::vector<int64_t> ValuesInOrder(const std::vector<std::string>& keys, const Map& found,
                                   int64_t missing) {
  std::vector<int64_t> out;
  out.reserve(keys.size());
  for (const std::string& k : keys) {
    auto it = found.find(k);
    out.push_back(it == found.end() ? missing : it->second);
  }
  return out;
}

}  // namespace seqd
