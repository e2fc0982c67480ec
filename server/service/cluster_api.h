// The seam's cluster view: what a listener may read of cluster mode's
// membership and shard map, and the nudge another instance sends
// (server/cluster/cluster_node.h implements it; null outside cluster mode).
//
// Thread safety: every method is safe from any thread and never blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace seqd {

struct ClusterSnapshot {
  struct Shard {
    std::string owner;  // instance id; "" while free
    int64_t epoch = 0;
    // While the owner is not live (or the row is free): the member expected
    // to take the shard (TakerOf in cluster_keeper.cc); "" otherwise.
    std::string taker;
  };
  struct Member {
    std::string advertise;
    bool live = false;
  };
  std::vector<Shard> shards;              // by shard
  std::map<std::string, Member> members;  // by instance id

  // Derived tallies (metrics, /admin/cluster, the status page).
  struct Counts {
    std::map<std::string, int64_t> owned;  // shards per owner ("" for free ones)
    int64_t unowned = 0;                   // free, or owned by a member not live
    int64_t live = 0;                      // live members
  };
  Counts Count() const;
};

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;

  // This process's instance id.
  virtual const std::string& instance() const = 0;
  // False until the cluster tables have been read once.
  virtual bool ready() const = 0;
  // The shard count; 0 until ready().
  virtual uint32_t shards() const = 0;
  // The latest round's map; null until ready().
  virtual std::shared_ptr<const ClusterSnapshot> snapshot() const = 0;
  // The lease length and the stated drift bound between clocks
  // (server/cluster/shard_lease.h).
  virtual std::chrono::milliseconds lease() const = 0;
  virtual double max_drift() const = 0;
  // Runs a round now (op CLUSTER_NUDGE). Never blocks.
  virtual void Nudge() = 0;
};

}  // namespace seqd
