// Globally unique server message ids, reserved in blocks from leaf_alloc.
//
// Ids come from the segment store's key `seqd.server_msg_id` (created with
// the block size as its step if missing), so every process sharing the
// store hands out distinct ids. Ids are increasing within a process; a
// restart skips the rest of its block.
//
// Thread safety: Take() is safe from many threads. It BLOCKS on the store
// when a block runs out: call it from database (writer) threads only.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace seqd {

class SegmentStore;

inline constexpr char kServerMsgIdKey[] = "seqd.server_msg_id";

class ServerMsgIdSource {
 public:
  // `store` must outlive the source. REQUIRES: block_size >= 1.
  ServerMsgIdSource(SegmentStore& store, int64_t block_size);

  // `count` consecutive-in-order ids (not necessarily contiguous) appended
  // to `out`. kStoreUnavailable if a block cannot be reserved; ids already
  // taken by this call are then lost (ids may skip, never repeat).
  Status Take(size_t count, std::vector<int64_t>& out) EXCLUDES(mu_);

 private:
  Status RefillLocked() REQUIRES(mu_);

  SegmentStore& store_;
  const int64_t block_size_;
  Mutex mu_;
  int64_t next_ GUARDED_BY(mu_) = 0;  // next_ > last_: no block
  int64_t last_ GUARDED_BY(mu_) = -1;
};

}  // namespace seqd
