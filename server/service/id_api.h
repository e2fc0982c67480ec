// The seam's IDs: what a listener may ask of the segment and dense
// allocators, through the key's owner (server/route/key_router.h implements
// IdApi; a test may stub it), and the values they answer with.
//
// Requests are checked once, by the IdApi implementation, before anything
// is served or forwarded: a listener only parses (is it a number, is the
// frame whole) and passes what it read in a TakeRequest.
//
// Thread safety: IdApi's methods are safe from any thread and never block
// it; each callback runs exactly once, on a network, database, writer or
// timer thread. The values are plain values: one writer at a time.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"

namespace seqd {

// An inclusive range of IDs.
struct IdRange {
  int64_t first = 0;
  int64_t last = 0;
  int64_t size() const { return last - first + 1; }
  bool operator==(const IdRange&) const = default;
};

// The IDs of one call, as the contiguous ranges they span, in increasing order.
struct IdBatch {
  // Inline room for two ranges: a batch spans at most two segments unless it
  // is larger than a segment, so the hot path does not allocate.
  boost::container::small_vector<IdRange, 2> ranges;
  int64_t count() const;
};

using TakeCallback = std::function<void(Result<IdBatch>)>;

// One segment buffer as seen by admin pages.
struct BufferSnapshot {
  bool ready = false;
  int64_t first = 0, next = 0, last = 0;  // next = position (next ID to hand out)
  int64_t step = 0;
};

struct KeySnapshot {
  std::string key;
  bool auto_created = false;
  bool loading = false;  // a reservation is in flight
  BufferSnapshot current, next;
  int64_t step = 0;        // dynamic step for the next reservation
  int64_t table_step = 0;  // the row's step; floor of the dynamic step
  int64_t parked = 0;      // requests waiting for a reservation
  int64_t reservations = 0;
  std::optional<std::string> last_error;  // of the latest failed reservation
  int64_t idle_ms = 0;
  // IDs handed out per second over about the last minute (0 if none).
  double rate_per_s = 0;
  // IDs left in both buffers / rate_per_s; nullopt while the rate is 0.
  std::optional<double> runway_s;
};

struct DenseStats {
  int64_t requests = 0;      // blocks answered
  int64_t transactions = 0;  // store transactions run
  int64_t replayed = 0;      // blocks answered again for a retried token
  int64_t failures = 0;      // requests answered with an error by the store
  int64_t waiting_now = 0;   // requests waiting for a transaction
};

// At most this many keys in one call over many keys (MAX_IDS, GET_MIN_SEQS,
// SET_MIN_SEQS, USER_SEQS, SET_USER_SEQS).
inline constexpr size_t kMaxKeysPerCall = 1000;

// Whether a request may be forwarded to the key's owner: kNoForward marks a
// request that a peer already forwarded once (it is answered here, or
// WRONG_OWNER).
enum class Hop { kMayForward, kNoForward };

// One request for IDs, as a listener read it. The views must stay valid
// until Take() returns (Take copies what it keeps).
struct TakeRequest {
  std::string_view key;
  int64_t count = 1;
  // One run of consecutive IDs (NEXT_BLOCK, /id/{key}/block); a dense key's
  // IDs are always one run.
  bool contiguous = false;
  Hop hop = Hop::kMayForward;
  // Who asks (a token id): the allocators' limit on auto-created keys.
  std::string_view requester;
  // An idempotent request's token (dense keys only; DenseAllocator::Take).
  std::string_view token;
};

using ValuesCallback = std::function<void(Result<std::vector<int64_t>>)>;

// MAX_IDS_TIMES: each key's max, and the time of its last allocation (-1:
// the key has no row).
struct MaxIdsTimes {
  std::vector<int64_t> max_ids;
  std::vector<int64_t> times_ms;
};
using MaxIdsTimesCallback = std::function<void(Result<MaxIdsTimes>)>;

class IdApi {
 public:
  virtual ~IdApi() = default;

  // IDs of `request.key`: count, key and token are checked here, then the
  // IDs come from the key's allocator (dense or segment), at its owner.
  virtual void Take(const TakeRequest& request, TakeCallback done) = 0;
  // The largest count Take accepts for some key (a listener's parse bound).
  virtual int64_t max_count() const = 0;
  // The largest count Take accepts for every key: what a listener may
  // gather requests of one key into (RESP's runs of INCR).
  virtual int64_t common_max_count() const = 0;
  // Each key's largest ID handed out, in the order asked.
  virtual void MaxIds(std::vector<std::string> keys, Hop hop, ValuesCallback done) = 0;
  virtual void MaxIdsWithTimes(std::vector<std::string> keys, Hop hop,
                               MaxIdsTimesCallback done) = 0;
  // A user's per-conversation seqs (USER_SEQS, SET_USER_SEQS).
  virtual void GetUserSeqs(std::string user, UserSeqField field, std::vector<std::string> convs,
                           ValuesCallback done) = 0;
  virtual void SetUserSeqs(std::string user, UserSeqField field, bool raise_only,
                           std::vector<UserSeqValue> values, std::function<void(Status)> done) = 0;
  // Conversations' min seqs (GET_MIN_SEQS, SET_MIN_SEQS).
  virtual void GetMinSeqs(std::vector<std::string> keys, ValuesCallback done) = 0;
  virtual void SetMinSeqs(std::vector<MinSeqValue> values, Hop hop,
                          std::function<void(Status)> done) = 0;

  // True if `key` hands out dense blocks (a dense auto-create rule made it).
  virtual bool IsDense(std::string_view key) const = 0;
  // The dense allocator's totals; nullopt without one.
  virtual std::optional<DenseStats> dense_stats() const = 0;
  // Keys in memory here, sorted by key: every one, a page after `after`, one.
  virtual std::vector<KeySnapshot> Snapshot() const = 0;
  virtual std::vector<KeySnapshot> Snapshot(std::string_view after, size_t limit) const = 0;
  virtual std::optional<KeySnapshot> SnapshotKey(std::string_view key) const = 0;
};

}  // namespace seqd
