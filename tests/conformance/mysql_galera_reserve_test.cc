// SegmentStore on a Galera cluster, suite "mariadb_galera" (scripts/galera-test
// runs it with a URL listing the nodes): stores on different nodes reserve
// one key at once, each on new connections (as after a failover: statements
// are prepared on their first use, inside transactions), and no ID may be
// handed out twice. A conflicting commit of another node can roll a
// reservation's transaction back while one of its statements is being
// prepared, and the server reports nothing: the rest of the transaction
// then runs in a new one, reads the other node's max_id, and would hand out
// that node's range (MysqlConn::PrepareInto).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "storage/mysql/mysql_store.h"
#include "storage/store_stats.h"
#include "tests/conformance/conformance_support.h"

namespace seqd {
namespace {

using namespace conformance;
using Range = std::pair<int64_t, int64_t>;  // first, last

constexpr auto kRaceFor = std::chrono::seconds(3);
constexpr int kStoresPerNode = 2;
constexpr int kReservesPerStore = 2;
constexpr int64_t kStep = 10;

// IDs in more than one of `ranges` (each a closed interval).
int64_t IdsHandedOutTwice(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  int64_t twice = 0;
  int64_t covered_to = 0;  // the highest ID handed out so far
  for (const auto& [first, last] : ranges) {
    if (first <= covered_to) twice += std::min(last, covered_to) - first + 1;
    covered_to = std::max(covered_to, last);
  }
  return twice;
}

// Until `until`: a new store on `node` (one connection, nothing prepared),
// kReservesPerStore reservations of `key`, the store closed; every range
// served is added to `ranges`. Failed reservations (retries used up) are
// counted in `failed`.
void ReserveOnNewConnections(const MysqlOptions& node, const std::string& key,
                             std::chrono::steady_clock::time_point until, std::mutex& mu,
                             std::vector<Range>& ranges, std::atomic<int>& failed) {
  while (std::chrono::steady_clock::now() < until) {
    MysqlStore store(node);
    for (int i = 0; i < kReservesPerStore; ++i) {
      auto r = store.Reserve(key, std::nullopt);
      if (!r) {
        ++failed;
        continue;
      }
      std::lock_guard<std::mutex> lock(mu);
      ranges.emplace_back(r->first, r->last);
    }
  }
}

}  // namespace

TEST_SUITE("mariadb_galera") {
  TEST_CASE("galera: one key reserved through every node at once: no ID handed out twice") {
    const MysqlOptions all = TestMysqlOptions();
    REQUIRE_MESSAGE(all.hosts.size() >= 2, "SEQD_TEST_MYSQL_URL lists ", all.hosts.size(),
                    " hosts; this check needs the nodes of one Galera cluster");
    const std::string key = UniqueName("galera_dup");
    {
      MysqlStore first(OnHost(all, 0));
      REQUIRE_OK(first.EnsureSchema());
      REQUIRE_OK(first.CreateKey(key, kStep, ""));
    }
    // Every node has the row before the race (a read waits for its node to
    // apply what the cluster committed: wsrep_sync_wait).
    for (size_t n = 0; n < all.hosts.size(); ++n) {
      MysqlStore on_node(OnHost(all, n));
      REQUIRE_OK(on_node.GetKey(key));
    }
    const int64_t conflicts_before = ProcessStoreStats().conflicts.load();
    const int64_t silent_before = ProcessStoreStats().silent_rollbacks.load();
    const auto until = std::chrono::steady_clock::now() + kRaceFor;
    std::mutex mu;
    std::vector<Range> ranges;
    std::atomic<int> failed{0};
    std::vector<std::thread> stores;
    for (size_t n = 0; n < all.hosts.size(); ++n) {
      MysqlOptions node = OnHost(all, n);
      node.pool_size = 1;
      node.retry_budget_ms = 5000;
      for (int t = 0; t < kStoresPerNode; ++t) {
        stores.emplace_back(
            [&, node] { ReserveOnNewConnections(node, key, until, mu, ranges, failed); });
      }
    }
    for (auto& t : stores) t.join();
    const int64_t twice = IdsHandedOutTwice(ranges);
    const int64_t conflicts = ProcessStoreStats().conflicts.load() - conflicts_before;
    const int64_t silent = ProcessStoreStats().silent_rollbacks.load() - silent_before;
    MESSAGE(ranges.size() << " ranges of " << kStep << " served through " << all.hosts.size()
                          << " nodes, " << failed.load() << " reservations failed, " << conflicts
                          << " conflicts met (" << silent
                          << " of them transactions rolled back while a statement was prepared), "
                          << twice << " IDs handed out twice");
    CHECK(twice == 0);
    CHECK(conflicts > 0);  // the stores did race for the row
    // Every range came from the row: the last served ends at its max_id - 1.
    MysqlStore reader(OnHost(all, 0));
    auto row = reader.GetKey(key);
    REQUIRE_OK(row);
    int64_t highest = 0;
    for (const auto& r : ranges) highest = std::max(highest, r.second);
    CHECK(highest <= row->max_id - 1);
  }
}

}  // namespace seqd
