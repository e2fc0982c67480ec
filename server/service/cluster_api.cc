#include "server/service/cluster_api.h"

namespace seqd {

ClusterSnapshot::Counts ClusterSnapshot::Count() const {
  Counts c;
  for (const auto& [id, m] : members) c.live += m.live ? 1 : 0;
  for (const Shard& s : shards) {
    ++c.owned[s.owner];
    auto m = members.find(s.owner);
    if (s.owner.empty() || m == members.end() || !m->second.live) ++c.unowned;
  }
  return c;
}

}  // namespace seqd
