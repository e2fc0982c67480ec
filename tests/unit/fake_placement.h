// A PlacementApi for tests (server/service/placement_api.h): it shows
// `view`, answers `current` as its version and records what it was asked
// (moves, versions heard). And a ClusterApi with no members, for listeners
// that answer cluster ops only in cluster mode.
//
// Thread safety: version() and Heard() may be called from any thread (the
// listeners call them on their network threads); set `view` before use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/service/cluster_api.h"
#include "server/service/placement_api.h"

namespace seqd {

struct FakePlacement final : PlacementApi {
  PlacementView view;
  std::atomic<int64_t> current{0};
  std::vector<MoveRequest> moves;

  PlacementView View() const override { return view; }
  Status StartMove(const MoveRequest& request) override {
    moves.push_back(request);
    return OkStatus();
  }
  int64_t version() const override { return current.load(); }
  void Heard(int64_t version) override {
    MutexLock lock(mu);
    heard_.push_back(version);
  }
  std::vector<int64_t> heard() {
    MutexLock lock(mu);
    return heard_;
  }

 private:
  Mutex mu;
  std::vector<int64_t> heard_ GUARDED_BY(mu);
};

struct FakeCluster final : ClusterApi {
  const std::string& instance() const override { return id; }
  bool ready() const override { return true; }
  uint32_t shards() const override { return 8; }
  std::shared_ptr<const ClusterSnapshot> snapshot() const override {
    return std::make_shared<ClusterSnapshot>();
  }
  std::chrono::milliseconds lease() const override { return std::chrono::seconds(3); }
  double max_drift() const override { return 0.01; }
  void Nudge() override { ++nudges; }

  std::string id = "fake";
  std::atomic<int> nudges{0};
};

}  // namespace seqd
