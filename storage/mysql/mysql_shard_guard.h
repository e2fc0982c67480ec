// Store groups (docs/cluster.md, "Moving a shard"): what keeps a write that
// no lease fences out of a group its shard has left. Such writes (a
// message's status, a member, a conversation's min seq, user seqs, a key's
// creation or step) are served by any instance, in the group its placement
// view names, and that view may be stale for a lease round after a move's
// switch; a write that committed in the old group after the move's delta
// copy would be deleted with the old rows.
//
// So, inside the write's transaction, after its statements and just before
// its COMMIT, the lease row of each of its shards in this database is
// locked in share mode and read: a sealed row (the shard left, or is
// leaving, this group) refuses the write. The seal takes the row
// exclusively, so it waits for the writes in flight and every write that
// commits here commits before the seal: the delta copy, which runs after
// the seal, sees it. A Galera node certifies only write-write conflicts, so
// there the rows are written instead (fences + 1, as a fenced write does),
// and a write that races the seal on another node fails certification.
//
// Without store groups (no placement) nothing is checked and nothing is
// added to the write.
//
// Thread safety: Admit() is safe from any thread (on the caller's
// connection).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "common/error.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/store_placement.h"

namespace seqd {

class MysqlShardGuard {
 public:
  // `placement`: the store groups' placement, this database being one of
  // the groups; null: the only group.
  explicit MysqlShardGuard(std::shared_ptr<const StorePlacement> placement = nullptr)
      : placement_(std::move(placement)) {}

  // Whether the write of `keys` (keys or conversation ids) may commit:
  // nullopt if so, or without store groups; else the error the write must
  // answer, kStoreUnavailable (retryable: the caller's retry goes to the
  // group its refreshed view names), its transaction left for the pool to
  // roll back, and the placement told its view is stale. Also refused while
  // the cluster's shard count is not known yet (no key's group is).
  // REQUIRES: inside MysqlPool::Run, after the write's statements, before
  // its COMMIT.
  std::optional<Error> Admit(MysqlConn& c, std::span<const std::string_view> keys) const;
  std::optional<Error> Admit(MysqlConn& c, std::string_view key) const {
    return Admit(c, std::span<const std::string_view>(&key, 1));
  }

 private:
  const std::shared_ptr<const StorePlacement> placement_;
};

}  // namespace seqd
