// The durable side of segment allocation: Leaf's `leaf_alloc` table.
//
// Thread safety: every implementation is safe to call from many threads at
// once. Calls BLOCK on I/O, so they must only run on the database threads
// (a TaskRunner, server/base/task_runner.h), never on network threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace seqd {

// kFailedPrecondition: what a store without cluster mode answers a fenced
// call.
inline Error NoClusterMode() {
  return MakeError(ErrorCode::kFailedPrecondition, "this store has no cluster mode");
}

// One row of leaf_alloc.
struct KeyRow {
  std::string key;  // biz_tag
  int64_t max_id = 1;
  int64_t step = 0;
  std::string description;
  int64_t update_time_ms = 0;  // unix millis; 0 if the store does not track it
};

// A reserved, inclusive range [first, last] that no other caller of any
// process sharing the store will ever receive.
// Cluster mode's fence (storage/shard_lease_store.h): a write for a key
// commits only while `owner` holds the key's `shard` at `epoch`.
struct ShardFence {
  uint32_t shard = 0;
  std::string owner;
  int64_t epoch = 0;
};

struct ReservedSegment {
  int64_t first = 0;
  int64_t last = 0;
  int64_t table_step = 0;  // the row's configured step after the reservation
  // The range was recorded earlier under the request's token (a retry):
  // nothing was reserved now.
  bool replayed = false;
};

// Longest ReserveRequest::token, in bytes.
inline constexpr size_t kMaxBlockTokenLength = 64;

// One reservation of a batch (SegmentStore::ReserveMany).
struct ReserveRequest {
  std::string key;
  std::optional<int64_t> step;      // the row's own step if nullopt; else > 0
  std::optional<ShardFence> fence;  // as ReserveFenced if set
  // > 0: the row is created first if it is missing (max_id 1, this step,
  // `create_description`), as CreateKeys would, in the same transaction as
  // the reservation where the store can; the range is then `step` long, or
  // the row's step if `step` is nullopt. The row of a key that exists is
  // left as it is.
  int64_t create_step = 0;
  std::string_view create_description = {};  // must outlive the ReserveMany call
  // Non-empty (at most kMaxBlockTokenLength bytes; REQUIRES `step`): an
  // idempotent block. If the store holds a range of this key under this
  // token, that range is the answer (replayed), nothing is reserved, and a
  // `step` other than its length is kInvalidArgument. Else the range is
  // reserved and recorded under the token in the same transaction, so a
  // retry whose first answer was lost gets the same range. Must outlive the
  // ReserveMany call. Stores without tokens answer kFailedPrecondition.
  std::string_view token = {};
  // True: when this request reserves a range now (not on a replay), the
  // key's allocation time (GetAllocTimes) becomes the store's clock, in the
  // same transaction. Dense keys set it.
  bool stamp_time = false;
};

// One key's durable min seq (SegmentStore::SetMinSeqs): the table
// seqd_min_seq beside leaf_alloc (Leaf's table is left as it is).
struct MinSeqValue {
  std::string key;
  int64_t min_seq = 0;  // >= 0
};

// OpenIM's per-user seqs of a conversation (its SeqUser): a user's min,
// max and read seq in a conversation, in the table seqd_user_seq beside
// leaf_alloc (Leaf's table is left as it is). The numbers are the wire's.
enum class UserSeqField : uint8_t { kMin = 1, kMax = 2, kRead = 3 };

// One conversation's value of a UserSeqField (SegmentStore::SetUserSeqs).
struct UserSeqValue {
  std::string conv;
  int64_t seq = 0;  // >= 0
};

// Longest user id of the user seqs, in bytes.
inline constexpr size_t kMaxUserIdLength = 255;

// One row of a batch creation (SegmentStore::CreateKeys).
struct NewKey {
  std::string key;
  int64_t step = 0;
};

class SegmentStore {
 public:
  virtual ~SegmentStore() = default;

  // Creates leaf_alloc if it does not exist. Idempotent.
  virtual Status EnsureSchema() = 0;

  // Atomically advances max_id by `step` (the row's own step if nullopt) and
  // returns [max_id - step, max_id - 1], as Leaf does, in one transaction.
  // REQUIRES: step, if given, is > 0.
  // Errors: kUnknownKey if the row does not exist; kStoreUnavailable on I/O.
  virtual Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) = 0;

  // Reserve in the same transaction as a write to the shard's lease row
  // conditioned on `fence` (it must WRITE: Galera certifies only write-write
  // conflicts). kNotServing, with nothing reserved, if the lease is no
  // longer `fence.owner`'s at `fence.epoch`. Stores without cluster support
  // answer kFailedPrecondition.
  virtual Result<ReservedSegment> ReserveFenced(std::string_view key, std::optional<int64_t> step,
                                                const ShardFence& fence) {
    (void)key, (void)step, (void)fence;
    return NoClusterMode();
  }

  // Reserves each request's range as Reserve (or ReserveFenced, for a
  // request with a fence) would, in as few transactions as the store can:
  // the answer's i-th result is requests[i]'s. A key named twice gets two
  // ranges, in request order. kUnknownKey, kNotServing and an overflowing
  // max_id concern one request; a failure of the store fails every request
  // (none of their ranges will ever be served: a gap, never a duplicate).
  // Requests with a create_step never answer kUnknownKey. This default
  // creates their rows first (CreateKeys, one call per description), then
  // runs one transaction per request.
  virtual std::vector<Result<ReservedSegment>> ReserveMany(
      const std::vector<ReserveRequest>& requests) {
    if (Status created = CreateRequestedRows(requests); !created) {
      return std::vector<Result<ReservedSegment>>(requests.size(), created.error());
    }
    std::vector<Result<ReservedSegment>> out;
    out.reserve(requests.size());
    for (const ReserveRequest& r : requests) {
      if (!r.token.empty()) {
        out.push_back(MakeError(ErrorCode::kFailedPrecondition, "this store has no block tokens"));
        continue;
      }
      out.push_back(r.fence ? ReserveFenced(r.key, r.step, *r.fence) : Reserve(r.key, r.step));
    }
    return out;
  }

  // Forgets the ranges recorded under tokens (ReserveRequest::token) before
  // `before_unix_ms` (the store's own clock), so a retry after that is a
  // new request. Returns how many were forgotten; 0 for a store without
  // tokens.
  virtual Result<int64_t> PruneBlockTokens(int64_t before_unix_ms) {
    (void)before_unix_ms;
    return int64_t{0};
  }

  // ReserveMany, handing each request's result to `landed(i, result)`
  // (requests[i]'s; once per request, on the calling thread, before this
  // returns) as soon as it is final, so that a request stuck behind a locked
  // row need not hold back the others' answers (MysqlStore). This default:
  // ReserveMany, then every result in order.
  using ReserveLanded = std::function<void(size_t, Result<ReservedSegment>)>;
  virtual void ReserveEach(const std::vector<ReserveRequest>& requests,
                           const ReserveLanded& landed) {
    std::vector<Result<ReservedSegment>> out = ReserveMany(requests);
    for (size_t i = 0; i < out.size(); ++i) landed(i, std::move(out[i]));
  }

  // Creates the rows of `keys` that do not exist yet, with max_id = 1, as
  // CreateKey would, in as few transactions as the store can; rows already
  // there are left as they are. Ok once every key has a row. This default
  // runs one transaction per key.
  virtual Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) {
    for (const NewKey& k : keys) {
      Result<KeyRow> row = CreateKey(k.key, k.step, description);
      if (!row && row.error().code != ErrorCode::kKeyExists) return row.error();
    }
    return Ok{};
  }

  // The rows ReserveMany's requests ask to create (create_step > 0), by
  // CreateKeys: one call per description. Ok if none is asked for.
  Status CreateRequestedRows(const std::vector<ReserveRequest>& requests) {
    std::vector<NewKey> rows;
    std::string_view description;
    for (const ReserveRequest& r : requests) {
      if (r.create_step <= 0) continue;
      if (!rows.empty() && r.create_description != description) {
        if (Status st = CreateKeys(rows, description); !st) return st;
        rows.clear();
      }
      description = r.create_description;
      rows.push_back(NewKey{r.key, r.create_step});
    }
    return rows.empty() ? OkStatus() : CreateKeys(rows, description);
  }

  // Inserts a row with max_id = 1. kKeyExists if the key is already there.
  virtual Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                                   std::string_view description) = 0;

  virtual Result<KeyRow> GetKey(std::string_view key) = 0;

  // Rows with key > `after`, in key order, at most `limit` of them.
  virtual Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) = 0;

  // Changes the row's step. kUnknownKey if absent.
  virtual Result<KeyRow> SetStep(std::string_view key, int64_t step) = 0;

  // The largest ID reserved of each key (max_id - 1: every ID at or below
  // it was reserved, every later one is above it), 0 for a key without a
  // row, in the order asked. Never creates a row. This default reads the
  // rows one by one.
  virtual Result<std::vector<int64_t>> GetMaxIds(const std::vector<std::string>& keys) {
    std::vector<int64_t> out;
    out.reserve(keys.size());
    for (const std::string& k : keys) {
      Result<KeyRow> row = GetKey(k);
      if (!row && row.error().code != ErrorCode::kUnknownKey) return row.error();
      out.push_back(row ? row->max_id - 1 : 0);
    }
    return out;
  }

  // Per key, in the order asked: -1 for a key without a leaf_alloc row
  // (never created); else the unix millis of its last reservation made
  // with stamp_time, or, for a key never stamped, the row's update_time
  // (when its row last changed, as precise as the table keeps it: seconds
  // in Leaf's MySQL table). Never creates a row. Stores without allocation
  // times answer kFailedPrecondition.
  virtual Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) {
    (void)keys;
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no allocation times");
  }

  // The min seq of each key (0 for a key never set), in the order asked.
  // Stores without the table answer kFailedPrecondition.
  virtual Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) {
    (void)keys;
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no min seqs");
  }

  // Sets the min seq of each key (REQUIRES: each >= 0, no key twice; the key
  // need not have a leaf_alloc row), all in one transaction, durable before
  // it returns. With `fences` (cluster mode), in the same transaction as a
  // write to each fence's lease row, as ReserveFenced: kNotServing, with
  // nothing written, if any lease is no longer its owner's at its epoch
  // (stores without cluster support answer kFailedPrecondition); then
  // `refused_shard`, if given, names the shard found no longer held.
  virtual Status SetMinSeqs(const std::vector<MinSeqValue>& values,
                            const std::vector<ShardFence>& fences,
                            uint32_t* refused_shard = nullptr) {
    (void)values, (void)fences, (void)refused_shard;
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no min seqs");
  }

  // `field` of `user` in each conversation, in the order asked; 0 for a
  // pair never set. Stores without the table answer kFailedPrecondition.
  virtual Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                                   const std::vector<std::string>& convs) {
    (void)user, (void)field, (void)convs;
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no user seqs");
  }

  // Sets `field` of `user` in each conversation, all in one transaction,
  // durable before it returns: to the value given, or, with `raise_only`,
  // to the larger of it and the value stored. A pair's other fields start
  // at 0. REQUIRES: user 1..kMaxUserIdLength bytes, each seq >= 0, no
  // conversation twice. Stores without the table answer kFailedPrecondition.
  virtual Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                             const std::vector<UserSeqValue>& values) {
    (void)user, (void)field, (void)raise_only, (void)values;
    return MakeError(ErrorCode::kFailedPrecondition, "this store has no user seqs");
  }

  // Cheap round trip proving the store answers.
  virtual Status Ping() = 0;

  // Readies one more database connection for reservations, so the first
  // reservations after a start do not pay for opening connections and
  // preparing statements (over a slow link, round trips that stall a cold
  // key). Best effort; blocks; stores without connections do nothing.
  // Call it from as many threads as reservations may run on at once.
  virtual Status Warm() { return OkStatus(); }
};

}  // namespace seqd
