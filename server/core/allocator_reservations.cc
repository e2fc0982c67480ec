// SegmentAllocator: reservations. When a key's next segment is due, one
// reservation per key goes to the batch queue; a batch is one store
// transaction on the db runner (auto-created rows first, within
// auto_create_rate), or one per key after a locked row timed it out;
// OnReserved installs each result as it lands (or records the failure) and
// answers the requests parked on it.
#include <algorithm>
#include <sstream>

#include "common/client_safe_message.h"
#include "common/mutex.h"
#include "server/base/log.h"
#include "server/base/log_format.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "storage/store_shedding.h"

namespace seqd {

namespace {

// leaf_alloc.description of the rows auto-created keys get.
constexpr std::string_view kAutoCreatedDescription = "auto-created";

}  // namespace

void SegmentAllocator::MaybeReserveLocked(KeyState& s) {
  if (s.loading || s.has_next || shutting_down_) return;
  if (options_.gate && s.epoch == 0) return;  // not held: the next Take sets the epoch
  int64_t demand = 0;
  int64_t block = 0;  // the largest contiguous block waiting: the segment must hold it
  if (s.wait) {
    for (const auto& w : s.wait->parked) {
      demand += w->need;
      if (w->contiguous) block = std::max(block, w->need);
    }
  }
  // A parked block the current segment is too short for is due too.
  const bool due = s.CurrentLeftLocked() == 0 || demand > s.CurrentLeftLocked() ||
                   static_cast<double>(s.UsedLocked()) >
                       static_cast<double>(s.CurrentLocked().size()) * options_.prefetch_fraction;
  if (!due) return;
  const Clock::TimePoint now = clock_.Now();
  if (s.wait && now < s.wait->retry_at) return ScheduleRetryLocked(s);
  // Before the first reservation we do not know the table step; the store
  // uses the row's own step then.
  const int32_t step_before = s.step32;
  // The first takes the row's step (unknown until then): a block it is too
  // short for waits for the next one, sized to hold it.
  const int64_t step = s.reservations == 0 ? 0 : std::max(NextStepLocked(s, demand), block);
  // Cluster mode: the key's shard (always the same) at the key's epoch.
  const uint32_t shard = options_.gate ? options_.gate->Check(s.key).shard : 0;
  PendingReservation pending{KeyRef(&s), step, ShardGrant{shard, s.epoch}, now, {}};
  if (s.wait && s.reservations == 0) pending.creator = s.wait->creator;
  if (!reservation_queue_->Add(std::move(pending))) {
    s.step32 = step_before;  // nothing was reserved: the next try sizes it again
    // As many reservations wait for the store as keys fit in memory: it is
    // not keeping up. Try again after the backoff; parked requests wait
    // until then or their deadline.
    reservation_failures_.fetch_add(1, std::memory_order_relaxed);
    s.WaitLocked().last_error = "too many reservations waiting for the store";
    s.wait->retry_at = now + options_.retry_backoff;
    return ScheduleRetryLocked(s);
  }
  s.loading = true;
}

void SegmentAllocator::ScheduleRetryLocked(KeyState& s) {
  // Only if someone waits; later requests find retry_at themselves.
  if (!s.HasParkedLocked() || s.wait->retry_scheduled) return;
  s.wait->retry_scheduled = true;
  clock_.RunAt(s.wait->retry_at, [this, state = KeyRef(&s)] {
    LockGuard<TinyMutex> lock(state->mu);
    state->wait->retry_scheduled = false;  // the wait state stays while scheduled
    MaybeReserveLocked(*state);
    state->TidyLocked();
  });
}

ReserveRequest SegmentAllocator::RequestFor(const PendingReservation& p) const {
  ReserveRequest r;
  r.key = p.state->key;
  if (p.step > 0) r.step = p.step;
  if (options_.gate) r.fence = ShardFence{p.grant.shard, options_.gate->instance(), p.grant.epoch};
  // An auto-created key's first reservation creates its row in the same
  // transaction, unless auto_create_rate must first learn whether the row
  // is missing (RowsToCreate: only missing rows count against it).
  if (p.step == 0 && !auto_create_limit_ && p.state->AutoCreatedUnlocked()) {
    const AutoKeyRule* rule = rules_.Match(p.state->key);
    r.create_step = rule ? rule->step : 1;
    r.create_description = kAutoCreatedDescription;
  }
  return r;
}

void SegmentAllocator::RunReservations(std::vector<PendingReservation> batch) {
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  std::vector<ReserveRequest> requests;
  requests.reserve(batch.size());
  for (const PendingReservation& p : batch) requests.push_back(RequestFor(p));
  // Each result is installed as it lands (the store may answer some keys
  // before others: one stuck behind a locked row waits alone), except an
  // auto-created key's missing row, which waits for the rows to create.
  // A shed batch (the database queue is full) never reached the store: its
  // parked requests are answered now, not at their deadline.
  std::vector<Result<ReservedSegment>> results(
      batch.size(), MakeError(ErrorCode::kInternal, "reservation not answered"));
  std::vector<size_t> held;
  store_.ReserveEach(requests, [&](size_t i, Result<ReservedSegment> r) {
    if (!r && r.error().code == ErrorCode::kUnknownKey && batch[i].state->AutoCreatedUnlocked()) {
      results[i] = std::move(r);
      held.push_back(i);
      return;
    }
    const bool failed = !r;
    OnReserved(batch[i], std::move(r), seconds(), ShedThisThread() && failed);
  });
  if (held.empty()) return;

  // First use of auto-created keys: create their rows (one transaction for
  // all), then reserve again. A row another process created meanwhile is
  // fine. Only rows found missing count against auto_create_rate.
  const std::vector<size_t> to_create = RowsToCreate(batch, results);
  if (!to_create.empty()) CreateRowsAndReserve(batch, requests, to_create, results);
  const bool shed = ShedThisThread();
  for (size_t i : held) {
    const bool failed = !results[i];
    OnReserved(batch[i], std::move(results[i]), seconds(), shed && failed);
  }
}

std::vector<size_t> SegmentAllocator::RowsToCreate(const std::vector<PendingReservation>& batch,
                                                   std::vector<Result<ReservedSegment>>& results) {
  std::vector<size_t> to_create;
  for (size_t i = 0; i < batch.size(); ++i) {
    const KeyState& s = *batch[i].state;
    if (results[i] || results[i].error().code != ErrorCode::kUnknownKey ||
        !s.AutoCreatedUnlocked()) {
      continue;
    }
    if (auto_create_limit_ && !auto_create_limit_->TryTake(batch[i].creator, clock_.Now())) {
      auto_create_refused_.fetch_add(1, std::memory_order_relaxed);
      std::ostringstream what;
      what << "too many new keys: a token may auto-create " << auto_create_limit_->rate()
           << " keys per second (bursts of " << auto_create_limit_->burst() << "); retry later";
      results[i] = MakeError(ErrorCode::kResourceExhausted, what.str());
      continue;
    }
    to_create.push_back(i);
  }
  return to_create;
}

void SegmentAllocator::CreateRowsAndReserve(const std::vector<PendingReservation>& batch,
                                            std::vector<ReserveRequest>& requests,
                                            const std::vector<size_t>& to_create,
                                            std::vector<Result<ReservedSegment>>& results) {
  std::vector<NewKey> rows;
  std::vector<ReserveRequest> retry;
  for (size_t i : to_create) {
    const AutoKeyRule* rule = rules_.Match(batch[i].state->key);
    rows.push_back(NewKey{batch[i].state->key.str(), rule ? rule->step : 1});
    retry.push_back(std::move(requests[i]));
  }
  Status created = store_.CreateKeys(rows, kAutoCreatedDescription);
  std::vector<Result<ReservedSegment>> again =
      created ? store_.ReserveMany(retry)
              : std::vector<Result<ReservedSegment>>(retry.size(), created.error());
  for (size_t j = 0; j < to_create.size(); ++j) results[to_create[j]] = std::move(again[j]);
}

void SegmentAllocator::OnReserved(const PendingReservation& p, Result<ReservedSegment> result,
                                  double seconds, bool shed) {
  const KeyRef& state = p.state;
  Answers answers;
  bool forget_key = false;
  {
    LockGuard<TinyMutex> lock(state->mu);
    RecordReservationMetricsLocked(*state, result, seconds);
    state->loading = false;
    const bool fenced = !result && result.error().code == ErrorCode::kNotServing;
    if (options_.gate && (p.grant.epoch != state->epoch || fenced)) {
      DropStaleReservationLocked(*state, p.grant, fenced, answers);
    } else if (result) {
      InstallReservationLocked(*state, *result, p.sent_at, seconds);
      ServeParkedLocked(*state, answers);
    } else {
      forget_key = FailReservationLocked(*state, result.error(), seconds, shed, answers);
    }
    if (!state->erased) MaybeReserveLocked(*state);
    ReportIssuedLocked(*state);
    state->TidyLocked();
  }
  if (forget_key) {
    Erase(state);
    // Auto keys: rate refusals; a key the store refuses (kInvalidArgument)
    // is no unknown key: asked again, it is refused again with its reason.
    if (!state->AutoCreatedUnlocked() && !result && result.error().code == ErrorCode::kUnknownKey) {
      RememberUnknown(state->key);
    }
  }
  Deliver(answers);
}

void SegmentAllocator::RecordReservationMetricsLocked(KeyState& s,
                                                      const Result<ReservedSegment>& result,
                                                      double seconds) {
  if (!options_.metrics) return;
  const std::string metric_label = KeyMetricLabel(s.key, rules_.Match(s.key));
  // An unknown key (or one over the creation rate) is a client error: the
  // store answered.
  const bool unknown = !result && (result.error().code == ErrorCode::kUnknownKey ||
                                   result.error().code == ErrorCode::kResourceExhausted ||
                                   result.error().code == ErrorCode::kInvalidArgument);
  options_.metrics->SetStoreUp(static_cast<bool>(result) || unknown);
  // Per-key series only for keys the store confirmed (or a rule's label).
  // Confirmed: a rule's key from its admission, any other once the store
  // answered for it (its series starts then, at 0).
  const AutoKeyRule* rule = rules_.Match(s.key);
  const bool confirmed = rule || s.reservations > 0 || result;
  if (result && !rule) issued_counters_.For(s.key, nullptr);
  if (!unknown) {
    options_.metrics->ReservationDone(confirmed ? metric_label : std::string(kUnconfirmedKeyLabel),
                                      static_cast<bool>(result), seconds);
  }
}

void SegmentAllocator::DropStaleReservationLocked(KeyState& s, const ShardGrant& grant, bool fenced,
                                                  Answers& answers) {
  // Reserved under an epoch we no longer hold (the IDs are skipped, as
  // after a restart), or fenced out: the shard is someone else's.
  if (!fenced) return;
  SEQD_LOG(kInfo) << "reservation fenced out key=" << LogValue(s.key) << " shard=" << grant.shard
                  << " epoch=" << grant.epoch;
  options_.gate->Fenced(grant.shard, grant.epoch);
  if (grant.epoch != s.epoch) return;
  s.DropCurrentLocked();
  s.has_next = false;
  s.epoch = 0;
  for (auto& w : s.TakeParkedLocked()) {
    answers.emplace_back(
        w, MakeError(ErrorCode::kWrongOwner, "the key's shard moved to another instance"));
  }
}

void SegmentAllocator::InstallReservationLocked(KeyState& s, const ReservedSegment& seg,
                                                Clock::TimePoint sent_at, double seconds) {
  ++reservations_;
  // A finer use stamp for the keys used from now on (max_cached_keys
  // evicts by it) than the sweeps alone give.
  coarse_now_.store(clock_.Now(), std::memory_order_relaxed);
  SEQD_LOG(kInfo) << "reserved key=" << LogValue(s.key) << " range=[" << seg.first << ","
                  << seg.last << "] step=" << (seg.last - seg.first + 1)
                  << " table_step=" << seg.table_step << " duration_ms=" << seconds * 1000
                  << " parked=" << s.ParkedLocked();
  const Buffer b{seg.first, seg.last};
  if (s.CurrentLeftLocked() == 0) {
    InstallCurrentLocked(s, b, /*fast=*/true);
  } else {
    s.next = b;
    s.has_next = true;
    s.cursor.SetLimit(FastLimitLocked(s, s.CurrentLocked()));  // the rest, lock-free
  }
  s.SetTableStepLocked(seg.table_step);
  if (s.step32 == 0) s.SetStepLocked(std::max<int64_t>(seg.table_step, 1));
  s.last_reserved_at = clock_.Now();
  SampleRateLocked(s, s.last_reserved_at);
  ++s.reservations;
  // Sending to landing on our clock: queueing for a database thread
  // counts as much as the database's own latency.
  const double latency = std::chrono::duration<double>(s.last_reserved_at - sent_at).count();
  s.reserve_latency = allocator_internal::LatencyByte::Encode(
      std::max(latency, allocator_internal::LatencyByte::Decode(s.reserve_latency) / 2));
  s.issued_at_landing = static_cast<uint32_t>(s.IssuedLocked());
}

void SegmentAllocator::ServeParkedLocked(KeyState& s, Answers& answers) {
  if (!s.wait) return;
  WaitState& w = *s.wait;
  w.last_error.reset();
  w.creator.clear();  // the row exists now
  size_t served = 0;
  for (; served < w.parked.size(); ++served) {
    Waiter& waiter = *w.parked[served];
    const bool done = waiter.contiguous ? ServeBlockLocked(s, waiter.need, waiter.got)
                                        : ServeLocked(s, waiter.need, waiter.got);
    if (!done) break;
    answers.emplace_back(w.parked[served], std::move(waiter.got));
  }
  w.parked.erase(w.parked.begin(), w.parked.begin() + static_cast<ptrdiff_t>(served));
  if (served > 0 && s.has_current) {
    s.window_at_next_take = true;
    s.cursor.SetLimit(0);
  }
  if (w.parked.empty()) w.parked.shrink_to_fit();  // a burst's room goes back
}

bool SegmentAllocator::FailReservationLocked(KeyState& s, const Error& error, double seconds,
                                             bool shed, Answers& answers) {
  // The store answered, and no retry changes its answer: the key's row is
  // gone (or never existed), may not be created now, or is refused (a key
  // the database cannot keep apart from another, or cannot store).
  const bool client_error = error.code == ErrorCode::kUnknownKey ||
                            error.code == ErrorCode::kResourceExhausted ||
                            error.code == ErrorCode::kInvalidArgument;
  if (!client_error) ++reservation_failures_;
  // Shown on /admin/cache and the status page: never the store's own text.
  s.WaitLocked().last_error = ClientSafeMessage(error);
  if (client_error) {
    SEQD_LOG(kDebug) << ErrorCodeName(error.code) << " key=" << LogValue(s.key);  // not ours
    // Fail everyone and forget the key.
    const Error answer =
        error.code == ErrorCode::kUnknownKey ? UnknownKeyError(s.key.str()) : error;
    for (auto& w : s.TakeParkedLocked()) answers.emplace_back(w, answer);
    MarkErasedLocked(s);
    return true;
  }
  SEQD_LOG(kWarn) << "reservation failed key=" << LogValue(s.key)
                  << " code=" << ErrorCodeName(error.code) << " duration_ms=" << seconds * 1000
                  << " parked=" << s.ParkedLocked() << ": " << error.message;
  s.wait->retry_at = clock_.Now() + options_.retry_backoff;
  if (shed) {
    for (auto& w : s.TakeParkedLocked()) answers.emplace_back(w, ShedError());
  }
  return false;
}

void SegmentAllocator::Deliver(Answers& answers) {
  for (auto& [w, r] : answers) {
    --parked_now_;
    // Moved out so the pending deadline timer does not keep the caller's
    // state (its connection) alive.
    TakeCallback done = std::move(w->done);
    done(std::move(r));
  }
}

}  // namespace seqd
