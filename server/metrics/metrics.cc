// One registry of every series (names, help, labels) and the scrape-time
// refresh; the series are data best read in one place.
#include "server/metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cassert>
#include <map>
#include <sstream>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/metrics/dense_metrics.h"
#include "server/metrics/process_metrics.h"
#include "server/metrics/series.h"
#include "server/metrics/stream_metrics.h"
#include "storage/store_stats.h"

namespace seqd {

namespace {

constexpr std::array<std::string_view, kInterfaceCount> kInterfaceNames = {"http", "binary",
                                                                           "resp"};
constexpr size_t kMaxOps = 24;
constexpr size_t kErrorCodes = static_cast<size_t>(ErrorCode::kInternal) + 1;
// Statuses(): every ErrorCode, "ok", the protocol layers' own answers
// (server/service/wire_errors.h, ProtocolError), then "other".
constexpr size_t kMaxStatuses = kErrorCodes + 9;

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
          0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,   5};
}

size_t IndexOf(const std::vector<std::string_view>& names, std::string_view name, size_t fallback) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return fallback;
}

// One key label's gauges: a registered key as it is, auto-created keys
// summed per prefix rule (one series per rule, never per conversation).
struct KeyLabelTotals {
  bool registered = false;
  int64_t step = 0;
  int64_t current = 0, next = 0;
  double rate = 0;
  int64_t keys = 0, next_ready = 0;
};

}  // namespace

const std::vector<std::string_view>& Metrics::Ops(Interface i) {
  static const std::vector<std::string_view> http = {
      "seq",       "leaf_segment",     "admin",        "health",     "metrics",   "status",
      "msg_send",  "msg_pull",         "msg_member",   "msg_status", "msg_batch", "msg_events",
      "snowflake", "snowflake_decode", "leaf_monitor", "max_ids",    "min_seqs",  "user_seqs",
      "other"};
  static const std::vector<std::string_view> binary = {
      "ping",       "next_ids",  "auth",      "msg_send",      "msg_pull",         "msg_member",
      "msg_status", "msg_batch", "subscribe", "snowflake",     "snowflake_decode", "cluster_map",
      "next_block", "max_ids",   "min_seqs",  "user_seqs",     "protocol_error"};
  static const std::vector<std::string_view> resp = {"incr",    "incrby",   "ping",
                                                     "max_ids", "min_seqs", "other"};
  switch (i) {
    case Interface::kHttp:
      return http;
    case Interface::kBinary:
      return binary;
    case Interface::kResp:
      break;
  }
  return resp;
}

const std::vector<std::string_view>& Metrics::Statuses() {
  static const std::vector<std::string_view> statuses = [] {
    std::vector<std::string_view> s;
    for (size_t c = 0; c < kErrorCodes; ++c) s.push_back(ErrorCodeName(static_cast<ErrorCode>(c)));
    for (std::string_view x :
         {"ok", "bad_request", "method_not_allowed", "unsupported_media_type", "malformed_frame",
          "unsupported_version", "frame_too_large", "unknown_opcode", "other"}) {
      s.push_back(x);
    }
    return s;
  }();
  assert(statuses.size() == kMaxStatuses);
  return statuses;
}

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  ProcessCollector process;  // process_*, read from /proc at each scrape

  // Series added on first use, under create_mu.
  prometheus::Family<prometheus::Counter>* requests PT_GUARDED_BY(create_mu) = nullptr;
  prometheus::Family<prometheus::Histogram>* request_duration = nullptr;
  prometheus::Family<prometheus::Gauge>* open_connections = nullptr;
  prometheus::Family<prometheus::Counter>* ids_issued PT_GUARDED_BY(create_mu) = nullptr;
  prometheus::Family<prometheus::Counter>* reservations PT_GUARDED_BY(create_mu) = nullptr;
  // Their series by key label: {ok, error}, each made on first use (a
  // reservation is counted without building the family's label set).
  std::unordered_map<std::string, std::array<prometheus::Counter*, 2>> reservation_counters
      GUARDED_BY(create_mu);
  prometheus::Histogram* reservation_duration = nullptr;
  // Their series are replaced at each scrape, under render_mu.
  prometheus::Family<prometheus::Gauge>* key_step PT_GUARDED_BY(render_mu) = nullptr;
  prometheus::Family<prometheus::Gauge>* key_remaining PT_GUARDED_BY(render_mu) = nullptr;
  prometheus::Family<prometheus::Gauge>* key_runway PT_GUARDED_BY(render_mu) = nullptr;
  prometheus::Family<prometheus::Gauge>* key_next_ready PT_GUARDED_BY(render_mu) = nullptr;
  prometheus::Gauge* parked = nullptr;
  prometheus::Gauge* keys_in_memory = nullptr;
  prometheus::Gauge* unknown_keys = nullptr;
  prometheus::Counter* evicted_idle = nullptr;
  prometheus::Counter* evicted_capacity = nullptr;
  prometheus::Counter* auto_create_refused = nullptr;
  prometheus::Counter* parked_total = nullptr;
  prometheus::Gauge* store_up = nullptr;
  // Copied from ProcessStoreStats() at scrape time: failures by
  // CommitFailure, then unknown outcomes, conflicts, conflict retries,
  // ranges skipped.
  std::array<prometheus::Counter*, kCommitFailureKinds> commit_failures{};
  prometheus::Counter* commits_unknown = nullptr;
  prometheus::Counter* conflicts = nullptr;
  prometheus::Counter* conflict_retries = nullptr;
  prometheus::Counter* silent_rollbacks = nullptr;
  prometheus::Counter* ranges_skipped = nullptr;
  prometheus::Counter* batch_lock_timeouts = nullptr;
  prometheus::Counter* stored = nullptr;
  prometheus::Counter* duplicates = nullptr;
  prometheus::Family<prometheus::Counter>* send_errors PT_GUARDED_BY(create_mu) = nullptr;
  prometheus::Counter* batches = nullptr;
  prometheus::Histogram* batch_size = nullptr;
  prometheus::Histogram* commit_duration = nullptr;
  prometheus::Gauge* queued_sends = nullptr;
  prometheus::Gauge* subscriptions = nullptr;
  prometheus::Counter* snowflake_issued = nullptr;
  prometheus::Counter* clock_back_waited = nullptr;
  prometheus::Counter* clock_back_refused = nullptr;
  prometheus::Counter* sequence_waits = nullptr;
  prometheus::Counter* renewals_ok = nullptr;
  prometheus::Counter* renewals_failed = nullptr;
  // worker id, serving, lease seconds left, parked requests
  std::array<prometheus::Family<prometheus::Gauge>*, 4> snowflake_gauges GUARDED_BY(render_mu) = {};

  // Request counters, created on first use: [interface][op][status].
  Mutex create_mu;
  std::array<std::array<std::array<std::atomic<prometheus::Counter*>, kMaxStatuses>, kMaxOps>,
             kInterfaceCount>
      request_counters{};
  std::array<prometheus::Histogram*, kInterfaceCount> durations{};
  std::array<std::atomic<prometheus::Counter*>, kErrorCodes> send_error_counters{};

  // Scrape-time sources, guarded by render_mu.
  Mutex render_mu;
  std::function<AllocatorGauges()> allocator_stats GUARDED_BY(render_mu);
  std::function<MessageGauges()> message_stats GUARDED_BY(render_mu);
  std::function<DenseGauges()> dense_stats GUARDED_BY(render_mu);
  std::unique_ptr<DenseMetrics> dense;  // set once; updated under render_mu
  std::function<SnowflakeGauges()> snowflake_stats GUARDED_BY(render_mu);
  std::array<std::function<size_t()>, kInterfaceCount> connections GUARDED_BY(render_mu);
  std::unique_ptr<StreamMetrics> streams;
  std::array<prometheus::Gauge*, kInterfaceCount> connection_gauges GUARDED_BY(render_mu) = {};
  std::array<prometheus::Counter*, kInterfaceCount> write_timeouts{};  // set once
  // step, remaining, runway, next_ready
  std::vector<prometheus::Gauge*> key_series[4] GUARDED_BY(render_mu);

  // Each registers one group's families in `r` and sets the members above
  // that point into them; the constructor calls them once, in its order.
  void RegisterBuild(prometheus::Registry& r, std::string_view version);
  void RegisterRequests(prometheus::Registry& r);
  void RegisterKeys(prometheus::Registry& r);
  void RegisterAllocator(prometheus::Registry& r);
  void RegisterStore(prometheus::Registry& r);
  void RegisterMessages(prometheus::Registry& r);
  void RegisterSnowflake(prometheus::Registry& r) REQUIRES(render_mu);
  void RegisterInterfaces(prometheus::Registry& r) REQUIRES(render_mu);

  // A scrape's refresh: the store's totals, then what the sources report.
  void RefreshStoreStats();
  void RefreshSources() REQUIRES(render_mu);
  // The allocator's gauges, its key series replaced by those of `gauges`.
  void RefreshAllocator(const AllocatorGauges& gauges) REQUIRES(render_mu);
  void AddKeySeries(const std::string& label, const KeyLabelTotals& totals) REQUIRES(render_mu);
};

Metrics::Metrics(std::string_view version) : impl_(std::make_unique<Impl>()) {
  prometheus::Registry& r = *impl_->registry;
  impl_->streams = std::make_unique<StreamMetrics>(r);
  impl_->dense = std::make_unique<DenseMetrics>(r);
  // In this order: a scrape lists each kind's families (counters, gauges,
  // histograms) in the order they were registered. Under render_mu, which
  // guards some of the members they set.
  MutexLock lock(impl_->render_mu);
  impl_->RegisterBuild(r, version);
  impl_->RegisterRequests(r);
  impl_->RegisterKeys(r);
  impl_->RegisterAllocator(r);
  impl_->RegisterStore(r);
  impl_->RegisterMessages(r);
  impl_->RegisterSnowflake(r);
  impl_->RegisterInterfaces(r);
}

void Metrics::Impl::RegisterBuild(prometheus::Registry& r, std::string_view version) {
  GaugeFamily(r, "seqd_build_info", "Build of this process (always 1)")
      .Add({{"version", std::string(version)}})
      .Set(1);
  OneGauge(r, "seqd_start_time_seconds", "Unix time of the process start")
      .Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count());
}

void Metrics::Impl::RegisterRequests(prometheus::Registry& r) {
  requests = &CounterFamily(r, "seqd_requests_total", "Requests answered");
  request_duration = &HistogramFamily(r, "seqd_request_duration_seconds",
                                      "From the complete request to the answer being queued");
  open_connections = &GaugeFamily(r, "seqd_open_connections", "Open client connections");
}

void Metrics::Impl::RegisterKeys(prometheus::Registry& r) {
  ids_issued = &CounterFamily(r, "seqd_ids_issued_total", "IDs handed out");
  reservations =
      &CounterFamily(r, "seqd_segment_reservations_total", "Segment reservations from the store");
  reservation_duration = &OneHistogram(r, "seqd_segment_reservation_duration_seconds",
                                       "One reservation's store round trip", LatencyBuckets());
  key_step = &GaugeFamily(r, "seqd_key_step", "Step of the next reservation (registered keys)");
  key_remaining = &GaugeFamily(r, "seqd_key_ids_remaining", "IDs left in each buffer");
  key_runway = &GaugeFamily(r, "seqd_key_runway_seconds",
                            "IDs left in both buffers / rate over the last minute");
  key_next_ready =
      &GaugeFamily(r, "seqd_key_next_ready",
                   "1 if the next buffer is loaded (auto keys: fraction of keys in memory)");
}

void Metrics::Impl::RegisterAllocator(prometheus::Registry& r) {
  parked = &OneGauge(r, "seqd_parked_requests", "Requests waiting for a reservation");
  keys_in_memory =
      &OneGauge(r, "seqd_keys_in_memory", "Keys held in memory (at most max_cached_keys)");
  unknown_keys = &OneGauge(r, "seqd_unknown_keys_cached",
                           "Keys remembered as recently unknown (answered without the store)");
  auto& evictions =
      CounterFamily(r, "seqd_keys_evicted_total",
                    "Keys dropped from memory: unused for key_idle_timeout_s (idle), or "
                    "least recently used beyond max_cached_keys (capacity)");
  evicted_idle = &evictions.Add({{"reason", "idle"}});
  evicted_capacity = &evictions.Add({{"reason", "capacity"}});
  parked_total = &OneCounter(r, "seqd_parked_total",
                             "Requests that found both buffers empty and waited for a reservation");
  auto_create_refused = &OneCounter(r, "seqd_auto_create_refused_total",
                                    "New auto-created keys refused by auto_create_rate");
}

void Metrics::Impl::RegisterStore(prometheus::Registry& r) {
  store_up = &OneGauge(r, "seqd_store_up", "1 if the last store round trip succeeded");
  store_up->Set(1);
  auto& failures =
      CounterFamily(r, "seqd_store_commit_failures_total",
                    "Failed store transactions by reason (conflict, lost, timeout, other)");
  for (size_t i = 0; i < kCommitFailureKinds; ++i) {
    commit_failures[i] =
        &failures.Add({{"reason", std::string(CommitFailureName(static_cast<CommitFailure>(i)))}});
  }
  commits_unknown =
      &OneCounter(r, "seqd_store_commits_unknown_total",
                  "COMMITs whose outcome is unknown (connection lost after sending it)");
  conflicts = &OneCounter(r, "seqd_store_conflicts_total",
                          "Store transactions rolled back by a deadlock, a Galera certification "
                          "conflict or a lock wait timeout, at a statement or at COMMIT");
  conflict_retries =
      &OneCounter(r, "seqd_store_conflict_retries_total",
                  "Transactions run again after a deadlock or certification conflict");
  silent_rollbacks =
      &OneCounter(r, "seqd_store_silent_rollbacks_total",
                  "Of the conflicts, transactions a Galera node rolled back without an error "
                  "while it prepared one of their statements (caught, run again)");
  ranges_skipped =
      &OneCounter(r, "seqd_store_reserved_ranges_skipped_total",
                  "Reserved ranges never served because their COMMIT's outcome was unknown");
  batch_lock_timeouts = &OneCounter(r, "seqd_store_batch_lock_timeouts_total",
                                    "Reservation batches rolled back after their short lock wait "
                                    "(a row locked by another transaction), then run one key at "
                                    "a time");
}

void Metrics::Impl::RegisterMessages(prometheus::Registry& r) {
  stored = &OneCounter(r, "seqd_messages_stored_total", "Messages committed (re-sends excluded)");
  duplicates =
      &OneCounter(r, "seqd_message_duplicates_total", "Re-sends answered with the original");
  send_errors = &CounterFamily(r, "seqd_message_send_errors_total", "Sends that failed");
  batches = &OneCounter(r, "seqd_message_batches_total", "Group-commit transactions");
  batch_size = &OneHistogram(r, "seqd_message_batch_size", "Messages per transaction",
                             {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  commit_duration = &OneHistogram(r, "seqd_message_commit_duration_seconds",
                                  "One Append transaction", LatencyBuckets());
  queued_sends = &OneGauge(r, "seqd_message_queued_sends", "Sends waiting for a writer");
  subscriptions = &OneGauge(r, "seqd_message_subscriptions", "Push subscriptions open");
}

void Metrics::Impl::RegisterSnowflake(prometheus::Registry& r) {
  snowflake_issued = &OneCounter(r, "seqd_snowflake_ids_issued_total", "Snowflake IDs handed out");
  auto& clock_back =
      CounterFamily(r, "seqd_snowflake_clock_backwards_total",
                    "Requests that met a clock moved back: waited (within the bound) "
                    "or refused");
  clock_back_waited = &clock_back.Add({{"outcome", "waited"}});
  clock_back_refused = &clock_back.Add({{"outcome", "refused"}});
  sequence_waits = &OneCounter(r, "seqd_snowflake_sequence_waits_total",
                               "Requests that waited for the next millisecond");
  auto& renewals = CounterFamily(r, "seqd_snowflake_lease_renewals_total",
                                 "Worker-id lease claims and renewals");
  renewals_ok = &renewals.Add({{"result", "ok"}});
  renewals_failed = &renewals.Add({{"result", "error"}});
  // The gauges' series exist only once a generator is attached
  // (SetSnowflakeStats): with snowflake = off there is no
  // seqd_snowflake_serving to alert on.
  const char* const gauges[4][2] = {
      {"seqd_snowflake_worker_id", "Worker id leased by this process (-1: none)"},
      {"seqd_snowflake_serving", "1 if snowflake IDs can be issued now"},
      {"seqd_snowflake_lease_seconds_left", "Until the worker-id lease runs out unless renewed"},
      {"seqd_snowflake_parked_requests", "Snowflake requests waiting (next ms, clock catching up)"},
  };
  for (size_t i = 0; i < 4; ++i) {
    snowflake_gauges[i] = &GaugeFamily(r, gauges[i][0], gauges[i][1]);
  }
}

void Metrics::Impl::RegisterInterfaces(prometheus::Registry& r) {
  auto& closes = CounterFamily(r, "seqd_write_timeout_closes_total",
                               "Connections closed: a reply not taken within the write timeout");
  for (size_t i = 0; i < kInterfaceCount; ++i) {
    const std::string name(kInterfaceNames[i]);
    write_timeouts[i] = &closes.Add({{"interface", name}});
    durations[i] = &request_duration->Add({{"interface", name}}, LatencyBuckets());
    connection_gauges[i] = &open_connections->Add({{"interface", name}});
  }
}

Metrics::~Metrics() = default;

prometheus::Registry& Metrics::registry() { return *impl_->registry; }
StreamMetrics& Metrics::streams() { return *impl_->streams; }

void Metrics::CountRequest(Interface i, std::string_view op, std::string_view status,
                           double seconds, int64_t n) {
  const auto& ops = Ops(i);
  const auto& statuses = Statuses();
  const size_t ii = static_cast<size_t>(i);
  const size_t o = IndexOf(ops, op, ops.size() - 1);
  const size_t s = IndexOf(statuses, status, statuses.size() - 1);
  std::atomic<prometheus::Counter*>& slot = impl_->request_counters[ii][o][s];
  prometheus::Counter* c = slot.load(std::memory_order_acquire);
  if (!c) {
    MutexLock lock(impl_->create_mu);
    c = &impl_->requests->Add({{"interface", std::string(kInterfaceNames[ii])},
                               {"op", std::string(ops[o])},
                               {"status", std::string(statuses[s])}});
    slot.store(c, std::memory_order_release);
  }
  c->Increment(static_cast<double>(n));
  if (seconds >= 0) impl_->durations[ii]->Observe(seconds);
}

void Metrics::SetOpenConnections(Interface i, std::function<size_t()> source) {
  MutexLock lock(impl_->render_mu);
  impl_->connections[static_cast<size_t>(i)] = std::move(source);
}

void Metrics::WriteTimedOut(Interface i) {
  impl_->write_timeouts[static_cast<size_t>(i)]->Increment();
}

prometheus::Counter& Metrics::IdsIssued(const std::string& label) {
  MutexLock lock(impl_->create_mu);
  return impl_->ids_issued->Add({{"key", label}});
}

void Metrics::ReservationDone(const std::string& label, bool ok, double seconds) {
  {
    MutexLock lock(impl_->create_mu);
    prometheus::Counter*& counter = impl_->reservation_counters[label][ok ? 0 : 1];
    if (!counter)
      counter = &impl_->reservations->Add({{"key", label}, {"result", ok ? "ok" : "error"}});
    counter->Increment();
  }
  impl_->reservation_duration->Observe(seconds);
}

void Metrics::SetStoreUp(bool up) { impl_->store_up->Set(up ? 1 : 0); }

void Metrics::SetAllocatorStats(std::function<AllocatorGauges()> source) {
  MutexLock lock(impl_->render_mu);
  impl_->allocator_stats = std::move(source);
}

void Metrics::MessageStored(int64_t n) { impl_->stored->Increment(static_cast<double>(n)); }
void Metrics::MessageDuplicates(int64_t n) { impl_->duplicates->Increment(static_cast<double>(n)); }

void Metrics::MessageSendError(ErrorCode code, int64_t n) {
  const size_t c = static_cast<size_t>(code);
  if (c >= kErrorCodes) return;
  prometheus::Counter* counter = impl_->send_error_counters[c].load(std::memory_order_acquire);
  if (!counter) {
    MutexLock lock(impl_->create_mu);
    counter = &impl_->send_errors->Add({{"status", std::string(ErrorCodeName(code))}});
    impl_->send_error_counters[c].store(counter, std::memory_order_release);
  }
  counter->Increment(static_cast<double>(n));
}

void Metrics::MessageBatch(size_t messages, double commit_seconds) {
  impl_->batches->Increment();
  impl_->batch_size->Observe(static_cast<double>(messages));
  impl_->commit_duration->Observe(commit_seconds);
}

void Metrics::SetMessageStats(std::function<MessageGauges()> source) {
  MutexLock lock(impl_->render_mu);
  impl_->message_stats = std::move(source);
}

void Metrics::SetDenseStats(std::function<DenseGauges()> source) {
  MutexLock lock(impl_->render_mu);
  impl_->dense_stats = std::move(source);
}

void Metrics::SnowflakeIssued(int64_t n) {
  impl_->snowflake_issued->Increment(static_cast<double>(n));
}
void Metrics::SnowflakeClockBack(bool refused) {
  (refused ? impl_->clock_back_refused : impl_->clock_back_waited)->Increment();
}
void Metrics::SnowflakeSequenceWait() { impl_->sequence_waits->Increment(); }
void Metrics::SnowflakeLeaseRenewal(bool ok) {
  (ok ? impl_->renewals_ok : impl_->renewals_failed)->Increment();
}

void Metrics::SetSnowflakeStats(std::function<SnowflakeGauges()> source) {
  MutexLock lock(impl_->render_mu);
  if (!impl_->snowflake_stats) {
    for (auto* family : impl_->snowflake_gauges) family->Add({});
  }
  impl_->snowflake_stats = std::move(source);
}

namespace {

// Raises a scrape-time counter to an atomic total (series.h's CatchUp).
void CatchUp(prometheus::Counter* c, const std::atomic<int64_t>& total) {
  seqd::CatchUp(c, total.load(std::memory_order_relaxed));
}

std::map<std::string, KeyLabelTotals> TotalsPerLabel(const std::vector<KeyGaugeInput>& keys) {
  std::map<std::string, KeyLabelTotals> per_label;
  for (const KeyGaugeInput& k : keys) {
    KeyLabelTotals& a = per_label[k.label];
    a.registered = k.registered;
    a.step = k.step;
    a.current += k.current_left;
    a.next += k.next_left;
    a.rate += k.rate_per_s;
    ++a.keys;
    if (k.next_ready) ++a.next_ready;
  }
  return per_label;
}

}  // namespace

void Metrics::Impl::RefreshStoreStats() {
  const StoreStats& store = ProcessStoreStats();
  for (size_t i = 0; i < kCommitFailureKinds; ++i) {
    CatchUp(commit_failures[i], store.commit_failures[i]);
  }
  CatchUp(commits_unknown, store.commits_unknown);
  CatchUp(conflicts, store.conflicts);
  CatchUp(conflict_retries, store.conflict_retries);
  CatchUp(silent_rollbacks, store.silent_rollbacks);
  CatchUp(ranges_skipped, store.ranges_skipped);
  CatchUp(batch_lock_timeouts, store.batch_lock_timeouts);
}

void Metrics::Impl::RefreshSources() {
  for (size_t i = 0; i < kInterfaceCount; ++i) {
    if (connections[i]) connection_gauges[i]->Set(static_cast<double>(connections[i]()));
  }
  if (message_stats) {
    MessageGauges g = message_stats();
    queued_sends->Set(static_cast<double>(g.queued_sends));
    subscriptions->Set(static_cast<double>(g.subscriptions));
  }
  if (dense_stats) dense->Update(dense_stats());
  if (snowflake_stats) {
    const SnowflakeGauges g = snowflake_stats();
    const double values[4] = {static_cast<double>(g.worker_id), g.serving ? 1.0 : 0.0,
                              g.lease_left_s, static_cast<double>(g.parked)};
    for (size_t i = 0; i < 4; ++i) snowflake_gauges[i]->Add({}).Set(values[i]);
  }
  if (allocator_stats) RefreshAllocator(allocator_stats());
}

void Metrics::Impl::RefreshAllocator(const AllocatorGauges& gauges) {
  parked->Set(static_cast<double>(gauges.parked));
  keys_in_memory->Set(static_cast<double>(gauges.keys_in_memory));
  unknown_keys->Set(static_cast<double>(gauges.unknown_keys));
  CatchUp(evicted_idle, gauges.evicted_idle);
  CatchUp(evicted_capacity, gauges.evicted_capacity);
  CatchUp(auto_create_refused, gauges.auto_create_refused);
  CatchUp(parked_total, gauges.parked_total);
  prometheus::Family<prometheus::Gauge>* families[4] = {key_step, key_remaining, key_runway,
                                                        key_next_ready};
  for (size_t f = 0; f < 4; ++f) {
    for (prometheus::Gauge* g : key_series[f]) families[f]->Remove(g);
    key_series[f].clear();
  }
  for (const auto& [label, a] : TotalsPerLabel(gauges.keys)) AddKeySeries(label, a);
}

void Metrics::Impl::AddKeySeries(const std::string& label, const KeyLabelTotals& a) {
  if (a.registered) {
    auto& g = key_step->Add({{"key", label}});
    g.Set(static_cast<double>(a.step));
    key_series[0].push_back(&g);
  }
  auto& cur = key_remaining->Add({{"key", label}, {"buffer", "current"}});
  cur.Set(static_cast<double>(a.current));
  auto& nxt = key_remaining->Add({{"key", label}, {"buffer", "next"}});
  nxt.Set(static_cast<double>(a.next));
  key_series[1].push_back(&cur);
  key_series[1].push_back(&nxt);
  if (a.rate > 0) {
    auto& g = key_runway->Add({{"key", label}});
    g.Set(static_cast<double>(a.current + a.next) / a.rate);
    key_series[2].push_back(&g);
  }
  auto& ready = key_next_ready->Add({{"key", label}});
  ready.Set(static_cast<double>(a.next_ready) / static_cast<double>(a.keys));
  key_series[3].push_back(&ready);
}

std::string Metrics::Render() {
  Impl& m = *impl_;
  MutexLock lock(m.render_mu);
  m.RefreshStoreStats();
  m.RefreshSources();
  std::ostringstream out;
  std::vector<prometheus::MetricFamily> families = m.registry->Collect();
  for (prometheus::MetricFamily& f : m.process.Collect()) families.push_back(std::move(f));
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace seqd
