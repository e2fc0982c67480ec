// Store groups (docs/cluster.md, "Moving a shard"): what keeps the reads
// and writes no lease fences out of a group their shard has left. They
// are served by any instance, in the group its placement view names, and
// that view may be stale for a lease round after a move's switch (or
// longer, on an instance that cannot read the placement):
// - writes (a message's status, a member, a conversation's min seq, user
//   seqs, a key's creation or step): one that committed in the old group
//   after the move's delta copy would be deleted with the old rows;
// - reads (pulls, max seqs, members, min seqs, user seqs, keys): one
//   served by the old group would answer its rows as they were at the
//   seal (or none, after the clean-up) while the new group takes writes.
//
// Writes: inside the write's transaction, after its statements and just
// before its COMMIT, the lease row of each of its shards in this database
// is locked in share mode and read: a sealed row (the shard left, or is
// leaving, this group) refuses the write. The seal takes the row
// exclusively, so it waits for the writes in flight and every write that
// commits here commits before the seal: the delta copy, which runs after
// the seal, sees it. A Galera node certifies only write-write conflicts, so
// there the rows are written instead (fences + 1, as a fenced write does),
// and a write that races the seal on another node fails certification.
//
// Reads: after the read's statements, the same rows are read, without a
// lock, in the same snapshot (the guard's read pool runs REPEATABLE READ),
// and a sealed row refuses the read. The snapshot is taken by the read's
// first statement, after everything committed before it began (on a
// Galera node wsrep_sync_wait, 1 unless the store URL sets it, makes it
// wait for what any node committed first), so a row unsealed in it means
// the group held the shard when the snapshot was taken: no other group
// had served a write of it yet. A seal and a reopening of the row between
// the read's statements (a move out and back) cannot pass a stale read.
//
// Without store groups (no placement) nothing is checked and nothing is
// added to a read or a write.
//
// Thread safety: every method is safe from any thread (on the caller's
// connection).
#pragma once

#include <concepts>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/store_placement.h"

namespace seqd {

// A list of keys: a range of them, not one key (a string is one key, never
// its characters).
template <typename Keys>
concept GuardedKeys =
    !std::is_convertible_v<const Keys&, std::string_view> && requires(const Keys& k) {
  { *std::begin(k) } -> std::convertible_to<std::string_view>;
};

class MysqlShardGuard {
 public:
  // `placement`: the store groups' placement, this database being the
  // group of index `group`; null: the only group. `read_pool`: where
  // Read() runs, a pool with MysqlOptions::snapshot_reads on this
  // database. Required with a placement: without it reads run on the
  // caller's pool (READ COMMITTED), where a check in a statement of its
  // own can pass a read made while the row was sealed.
  explicit MysqlShardGuard(std::shared_ptr<const StorePlacement> placement = nullptr,
                           size_t group = 0, std::shared_ptr<MysqlPool> read_pool = nullptr)
      : placement_(std::move(placement)), group_(group), read_pool_(std::move(read_pool)) {}

  // Whether the write of `keys` (keys or conversation ids) may commit:
  // nullopt if so, or without store groups; else the error the write must
  // answer, kStoreUnavailable (retryable: the caller's retry goes to the
  // group its refreshed view names), its transaction left for the pool to
  // roll back, and the placement told its view is stale. Also refused while
  // the cluster's shard count is not known yet (no key's group is).
  // REQUIRES: inside MysqlPool::Run, after the write's statements, before
  // its COMMIT.
  template <GuardedKeys Keys>
  std::optional<Error> Admit(MysqlConn& c, const Keys& keys) const {
    return Check(c, ShardsOf(keys), StaleAccess::kWrite);
  }
  std::optional<Error> Admit(MysqlConn& c, std::string_view key) const {
    return Admit(c, std::span<const std::string_view>(&key, 1));
  }

  // The same for a read of `keys` made by the transaction's statements so
  // far: nullopt if its answer may be given.
  // REQUIRES: inside the read pool's Run (see Read), after the read's
  // statements.
  template <GuardedKeys Keys>
  std::optional<Error> AdmitRead(MysqlConn& c, const Keys& keys) const {
    return Check(c, ShardsOf(keys), StaleAccess::kRead);
  }
  std::optional<Error> AdmitRead(MysqlConn& c, std::string_view key) const {
    return AdmitRead(c, std::span<const std::string_view>(&key, 1));
  }
  // AdmitRead for a listing of this group's rows: only the keys the view
  // puts in this group are checked (the grouped store drops the others).
  std::optional<Error> AdmitListed(MysqlConn& c, const std::vector<std::string>& keys) const;

  // A guarded read: runs `body(MysqlConn&) -> Result<T>` in
  // Run(session, op) of the read pool (with store groups; else of `pool`:
  // `body` must use only `session`'s statements and plain reads),
  // then AdmitRead(keys), then COMMIT. The answer is `body`'s (an error of
  // it too, such as no such key) if admitted, else the guard's refusal.
  // `keys`: one key or a list of them.
  template <typename T, typename Keys, typename Body>
  Result<T> Read(MysqlPool& pool, const MysqlSession& session, const char* op, const Keys& keys,
                 Body body) const {
    return ReadChecked<T>(pool, session, op, body,
                          [&](MysqlConn& c, const Result<T>&) { return AdmitRead(c, keys); });
  }
  // The same for a listing of this group's rows: `keys_of(const T&)` names
  // the keys `body` found, checked by AdmitListed.
  template <typename T, typename Body, typename KeysOf>
  Result<T> ReadListed(MysqlPool& pool, const MysqlSession& session, const char* op, Body body,
                       KeysOf keys_of) const {
    return ReadChecked<T>(pool, session, op, body,
                          [&](MysqlConn& c, const Result<T>& answer) -> std::optional<Error> {
                            if (!answer) return std::nullopt;
                            return AdmitListed(c, keys_of(*answer));
                          });
  }

 private:
  // The shards of `keys` (empty without store groups).
  template <GuardedKeys Keys>
  std::vector<uint32_t> ShardsOf(const Keys& keys) const {
    std::vector<uint32_t> shards;
    if (!placement_) return shards;
    for (const auto& key : keys) shards.push_back(placement_->ShardOf(key));
    return shards;
  }
  // Read and ReadListed: `body`, then `check(c, answer)` (a refusal or
  // nullopt), then COMMIT, in one transaction of the read pool (else of
  // `pool`).
  template <typename T, typename Body, typename Check>
  Result<T> ReadChecked(MysqlPool& pool, const MysqlSession& session, const char* op, Body& body,
                        const Check& check) const {
    MysqlPool& reads = placement_ && read_pool_ ? *read_pool_ : pool;
    return reads.Run<T>(session, op, [&](MysqlConn& c) -> Result<T> {
      Result<T> answer = body(c);
      if (auto refused = check(c, answer)) return *refused;
      c.Commit();  // ends the read's transaction
      return answer;
    });
  }
  // nullopt if every one of `shards` has an unsealed lease row here.
  std::optional<Error> Check(MysqlConn& c, std::vector<uint32_t> shards, StaleAccess access) const;

  const std::shared_ptr<const StorePlacement> placement_;
  const size_t group_;
  const std::shared_ptr<MysqlPool> read_pool_;
};

}  // namespace seqd
