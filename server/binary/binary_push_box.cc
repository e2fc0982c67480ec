#include "server/binary/binary_push_box.h"

#include "proto/message_codec.h"
#include "server/service/message_wire.h"

namespace seqd {

void PushBox::Push(const StoredMessage& m) {
  MutexLock lock(mu_);
  if (dropped_) return;
  const size_t before = buf_.size();
  proto::AppendPushMessage(buf_, proto::PushMessage{m.conv_id, MessageWire(m)});
  if (buf_.size() - before > max_frame_ ||
      buf_.size() + unsent_.load(std::memory_order_relaxed) > max_output_) {
    buf_.resize(before);
    dropped_ = true;
  }
  if (!posted_) {
    posted_ = true;
    schedule_drain_();
  }
}

std::string PushBox::Take(bool* dropped) {
  std::string data;
  MutexLock lock(mu_);
  data.swap(buf_);
  posted_ = false;
  *dropped = dropped_;
  return data;
}

void PushBox::Reopen() {
  MutexLock lock(mu_);
  dropped_ = false;
  buf_.clear();  // nothing was queued while dropped
}

}  // namespace seqd
