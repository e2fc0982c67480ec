#include "server/http/stream/sse_resume.h"

#include <algorithm>

namespace seqd {

void ConvResume::Start(int64_t last) {
  if (started_) return;
  started_ = true;
  last_ = last;
  need_pull_ = true;  // the replay, and the seam with what was kept meanwhile
  kept_.erase(kept_.begin(), kept_.upper_bound(last_));
}

void ConvResume::Deliver(const StoredMessage& m, std::vector<StoredMessage>& out) {
  out.push_back(m);
  last_ = m.seq;
}

void ConvResume::OnLive(const StoredMessage& m, std::vector<StoredMessage>& out) {
  if (started_ && m.seq <= last_) return;  // delivered already
  known_max_ = std::max(known_max_, m.seq);
  if (from_store_) {
    if (started_) need_pull_ = true;
    return;
  }
  if (live() && m.seq == last_ + 1) return Deliver(m, out);
  if (kept_.size() < max_kept_ || kept_.count(m.seq)) kept_.emplace(m.seq, m);
  if (started_) need_pull_ = true;  // a gap (or a pull under way: it decides)
}

void ConvResume::NoteMaxSeq(int64_t max_seq) {
  if (max_seq <= known_max_) return;
  known_max_ = max_seq;
  if (started_ && max_seq > last_) need_pull_ = true;
}

int64_t ConvResume::PullStarted() {
  pulling_ = true;
  covers_ = known_max_;
  return last_ + 1;
}

void ConvResume::OnPulled(const std::vector<StoredMessage>& page, bool more,
                          std::vector<StoredMessage>& out) {
  pulling_ = false;
  const int64_t before = last_;
  for (const StoredMessage& m : page) {
    if (m.seq > last_) Deliver(m, out);
  }
  if (more && last_ > before) return;  // the next page is due
  // Complete (or no progress): what was known when it was asked and did
  // not come back is not visible.
  last_ = std::max(last_, covers_);
  kept_.erase(kept_.begin(), kept_.upper_bound(last_));
  while (!kept_.empty() && kept_.begin()->first == last_ + 1) {
    Deliver(kept_.begin()->second, out);
    kept_.erase(kept_.begin());
  }
  need_pull_ = known_max_ > last_;
}

}  // namespace seqd
