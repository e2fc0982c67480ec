// ApiRouter: GET /admin/cluster, cluster mode's members and shard map
// (docs/cluster.md has the fields).
#include <map>
#include <string>

#include "server/http/api_call.h"
#include "server/http/api_router.h"
#include "server/service/cluster_api.h"
#include "server/service/services.h"

namespace seqd {

void ApiRouter::HandleCluster(const std::shared_ptr<Call>& call) {
  const ClusterApi* node = services_.cluster;
  call->Reply([&] {
    if (!node) {
      return call->ErrorJson(http::status::not_found, "not_found",
                             "cluster mode is off on this instance (see --cluster)");
    }
    seqd::Json j;
    j["instance"] = node->instance();
    j["ready"] = node->ready();
    j["shards"] = node->shards();
    j["lease_ms"] = node->lease().count();
    j["max_drift"] = node->max_drift();
    const auto snap = node->snapshot();
    seqd::Json members = seqd::Json::array();
    seqd::Json map = seqd::Json::array();
    if (snap) {
      ClusterSnapshot::Counts counts = snap->Count();
      for (const auto& [id, m] : snap->members) {
        members.push_back({{"instance", id},
                           {"advertise", m.advertise},
                           {"live", m.live},
                           {"shards_owned", counts.owned[id]}});
      }
      for (size_t i = 0; i < snap->shards.size(); ++i) {
        const auto& s = snap->shards[i];
        map.push_back({{"shard", i},
                       {"owner", s.owner.empty() ? seqd::Json(nullptr) : seqd::Json(s.owner)},
                       {"epoch", s.epoch}});
      }
    }
    j["members"] = std::move(members);
    j["shard_map"] = std::move(map);
    return call->JsonResponse(http::status::ok, j);
  });
}

}  // namespace seqd
