#include "seqd/receive_queue.h"

#include <algorithm>

namespace seqd::client {

ReceiveQueue::ReceiveQueue(DeliverFn deliver, RequestPullFn request_pull)
    : ReceiveQueue(std::move(deliver), std::move(request_pull), Options()) {}

ReceiveQueue::ReceiveQueue(DeliverFn deliver, RequestPullFn request_pull, Options options)
    : deliver_(std::move(deliver)),
      request_pull_(std::move(request_pull)),
      options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return Clock::now(); };
  if (options_.max_held == 0) options_.max_held = 1;
}

void ReceiveQueue::SetLocalSeq(const std::string& conv_id, int64_t local_seq) {
  Conv& c = convs_[conv_id];
  if (local_seq <= c.local_seq) return;
  c.local_seq = local_seq;
  c.max_seen = std::max(c.max_seen, local_seq);
  c.held.erase(c.held.begin(), c.held.upper_bound(local_seq));
  Drain(c);
  MaybeAsk(conv_id, c, false);
}

int64_t ReceiveQueue::local_seq(const std::string& conv_id) const {
  auto it = convs_.find(conv_id);
  return it == convs_.end() ? 0 : it->second.local_seq;
}

void ReceiveQueue::Forget(const std::string& conv_id) { convs_.erase(conv_id); }

size_t ReceiveQueue::held(const std::string& conv_id) const {
  auto it = convs_.find(conv_id);
  return it == convs_.end() ? 0 : it->second.held.size();
}

std::optional<std::pair<int64_t, int64_t>> ReceiveQueue::pending_request(
    const std::string& conv_id) const {
  auto it = convs_.find(conv_id);
  if (it == convs_.end() || !it->second.asked) return std::nullopt;
  return std::make_pair(it->second.ask_from, it->second.ask_to);
}

bool ReceiveQueue::Accept(Conv& c, const Message& m) {
  c.max_seen = std::max(c.max_seen, m.seq);
  if (m.seq <= c.local_seq) return false;  // delivered already
  if (m.seq == c.local_seq + 1) {
    ++c.local_seq;
    deliver_(m);
    c.held.erase(c.held.begin(), c.held.upper_bound(c.local_seq));
    Drain(c);
    return true;
  }
  if (c.held.count(m.seq)) return false;  // held already
  if (c.held.size() >= options_.max_held) {
    // Full: keep the lowest seqs (delivered first); a higher one is pulled
    // again once the gap before it is filled.
    auto last = std::prev(c.held.end());
    if (m.seq > last->first) return false;
    c.held.erase(last);
  }
  c.held.emplace(m.seq, m);
  return true;
}

void ReceiveQueue::Drain(Conv& c) {
  for (auto it = c.held.begin(); it != c.held.end() && it->first == c.local_seq + 1;) {
    ++c.local_seq;
    deliver_(it->second);
    it = c.held.erase(it);
  }
  if (c.asked && c.local_seq >= c.ask_to) c.asked = false;  // the range is filled
}

void ReceiveQueue::MaybeAsk(const std::string& conv_id, Conv& c, bool force) {
  if (c.max_seen <= c.local_seq) {
    c.asked = false;
    return;
  }
  const int64_t from = c.local_seq + 1;
  const int64_t to = c.held.empty() ? c.max_seen : c.held.begin()->first - 1;
  const Clock::time_point now = options_.now();
  if (c.asked && !force) {
    const bool covered = c.ask_from <= from && to <= c.ask_to;
    if (covered && now - c.asked_at < options_.retry_after) return;  // asked once, still live
  }
  c.asked = true;
  c.ask_from = from;
  c.ask_to = to;
  c.asked_at = now;
  request_pull_(conv_id, from, to);
}

void ReceiveQueue::Offer(const Message& message) {
  Conv& c = convs_[message.conv_id];
  Accept(c, message);
  MaybeAsk(message.conv_id, c, false);
}

void ReceiveQueue::OnPulled(const std::vector<Message>& messages) {
  std::vector<const Message*> sorted;
  sorted.reserve(messages.size());
  for (const Message& m : messages) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const Message* a, const Message* b) {
    return a->conv_id != b->conv_id ? a->conv_id < b->conv_id : a->seq < b->seq;
  });
  std::map<std::string, int64_t> before;  // conversation -> local_seq before
  for (const Message* m : sorted) {
    Conv& c = convs_[m->conv_id];
    before.emplace(m->conv_id, c.local_seq);
    Accept(c, *m);
  }
  for (const auto& [conv_id, old] : before) {
    Conv& c = convs_[conv_id];
    // An answer that moved us on: ask for what is still missing at once.
    // One that did not: wait for the retry time (the server may not have it).
    const bool progressed = c.local_seq > old;
    if (progressed && c.asked) c.asked = false;
    MaybeAsk(conv_id, c, false);
  }
}

void ReceiveQueue::NoteMaxSeq(const std::string& conv_id, int64_t max_seq) {
  Conv& c = convs_[conv_id];
  if (max_seq <= c.max_seen) return;
  c.max_seen = max_seq;
  MaybeAsk(conv_id, c, false);
}

void ReceiveQueue::Tick() {
  const Clock::time_point now = options_.now();
  for (auto& [conv_id, c] : convs_) {
    if (c.asked && now - c.asked_at >= options_.retry_after) MaybeAsk(conv_id, c, true);
  }
}

}  // namespace seqd::client
