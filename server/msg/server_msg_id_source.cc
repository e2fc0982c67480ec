#include "server/msg/server_msg_id_source.h"

#include "storage/segment_store.h"

namespace seqd {

ServerMsgIdSource::ServerMsgIdSource(SegmentStore& store, int64_t block_size)
    : store_(store), block_size_(block_size) {}

Status ServerMsgIdSource::Take(size_t count, std::vector<int64_t>& out) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < count; ++i) {
    if (next_ > last_) {
      Status refilled = RefillLocked();
      if (!refilled) return refilled;
    }
    out.push_back(next_++);
  }
  return OkStatus();
}

Status ServerMsgIdSource::RefillLocked() {
  Result<ReservedSegment> segment = store_.Reserve(kServerMsgIdKey, block_size_);
  if (!segment && segment.error().code == ErrorCode::kUnknownKey) {
    Result<KeyRow> created =
        store_.CreateKey(kServerMsgIdKey, block_size_, "seqd message store: server message ids");
    if (!created && created.error().code != ErrorCode::kKeyExists) return created.error();
    segment = store_.Reserve(kServerMsgIdKey, block_size_);
  }
  if (!segment) return segment.error();
  next_ = segment->first;
  last_ = segment->last;
  return OkStatus();
}

}  // namespace seqd
