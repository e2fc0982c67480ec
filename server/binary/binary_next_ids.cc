// NEXT_IDS, the binary protocol's hot path (binary_dispatcher.h), without
// allocating: a request taken on its own, or gathered with the requests of
// the same key that follow it in one read into a run (next_ids_runs.h),
// taken once and shared out in the order the requests came.
#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <type_traits>

#include "proto/id_codec.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"
#include "server/binary/binary_dispatcher.h"
#include "server/binary/binary_dispatcher_impl.h"
#include "server/binary/binary_ops.h"

namespace seqd {
namespace {

// The ranges of one answer, converted without allocating up to 4.
using WireRanges = boost::container::small_vector<proto::IdRangeWire, 4>;

}  // namespace

void BinaryDispatcher::HandleNextIds(const proto::FrameView& f, BinaryConnection& c) {
  const std::optional<proto::NextIdsRequest> req = proto::ParseNextIdsRequest(f.payload);
  if (!req) {
    if (c.runs().open()) TakeRun(c);
    return AnswerError(c, proto::Opcode::kNextIds, f.request_id, proto::Status::kInvalidArgument,
                       "NEXT_IDS payload must be u16 key_length, key, u32 count");
  }
  NextIdsRuns& runs = c.runs();
  const int64_t max_count = services_.ids.common_max_count();
  // Only a client's own request of a valid count, inside a read, joins a run;
  // a run goes on while the key stays the same and the counts fit one take.
  const bool gather = c.batching() && req->on_behalf_of.empty() && HopOf(f) == Hop::kMayForward &&
                      req->count >= 1 && req->count <= max_count;
  if (runs.open() && (!gather || req->key != runs.key() || runs.total() + req->count > max_count)) {
    TakeRun(c);
  }
  if (!Permit(f, c, req->key)) return;
  // A client's request forwarded by a peer counts against that client's
  // limits, not the peer's; only peers may say whom a request is for.
  std::string_view requester = c.access().token_id();
  if (!req->on_behalf_of.empty()) {
    if (!PermitAs(f, c, Permission::kCluster)) return;
    requester = req->on_behalf_of;
  }
  c.Hold();
  if (gather) {
    const NextIdsAsk ask{f.request_id, req->count};
    return runs.open() ? runs.Add(ask) : runs.Open(req->key, ask);
  }
  // Small and trivially copyable: std::function stores it without allocating.
  auto done = [conn = &c, id = f.request_id](Result<IdBatch> r) {
    conn->DeliverIds(id, std::move(r));
  };
  static_assert(sizeof(done) <= 16 && std::is_trivially_copyable_v<decltype(done)>);
  // Neither the key nor the token id is kept past the call.
  services_.ids.Take(
      {.key = req->key, .count = req->count, .hop = HopOf(f), .requester = requester}, done);
}

void BinaryDispatcher::EndOfBatch(BinaryConnection& c) {
  if (c.runs().open()) TakeRun(c);
}

void BinaryDispatcher::TakeRun(BinaryConnection& c) {
  NextIdsRuns& runs = c.runs();
  const uint32_t run = runs.Close();  // key() and total() stay until the next Open
  auto done = [conn = &c, run](Result<IdBatch> r) { conn->DeliverRun(run, std::move(r)); };
  static_assert(sizeof(done) <= 16 && std::is_trivially_copyable_v<decltype(done)>);
  services_.ids.Take({.key = runs.key(), .count = runs.total(), .requester = c.access().token_id()},
                     done);
}

void BinaryDispatcher::WriteIds(BinaryConnection& c, uint32_t id, const Result<IdBatch>& r) {
  constexpr auto kOp = static_cast<uint8_t>(proto::Opcode::kNextIds);
  if (r.ok()) {
    WireRanges wire;
    for (const IdRange& range : r->ranges) wire.push_back({range.first, range.last});
    proto::AppendOkNextIds(c.out(), id, wire.data(), wire.size());
    Count(kOp, id, proto::Status::kOk);
  } else {
    const BinaryError w = ToBinaryError(r.error());
    Count(kOp, id, w.status);
    proto::AppendError(c.out(), proto::Opcode::kNextIds, id, w.status, w.message);
    if (w.status == proto::Status::kShuttingDown) c.CloseAfterAnswers();
  }
  c.Queued();
}

// The run's IDs shared out in request order: each request gets the next
// `count` of them, over as many of the batch's ranges as they span.
void BinaryDispatcher::WriteRun(BinaryConnection& c, uint32_t run, const Result<IdBatch>& r) {
  const std::span<const NextIdsAsk> asks = c.runs().asks(run);
  if (!r.ok()) {
    for (const NextIdsAsk& ask : asks) WriteIds(c, ask.request_id, r);
    return c.runs().Release(run);
  }
  const auto& ranges = r->ranges;
  size_t at = 0;  // the range the next ID comes from
  int64_t next = ranges.empty() ? 0 : ranges[0].first;
  size_t served = 0;
  WireRanges wire;
  for (const NextIdsAsk& ask : asks) {
    wire.clear();
    int64_t need = ask.count;
    while (need > 0 && at < ranges.size()) {
      const int64_t n = std::min(need, ranges[at].last - next + 1);
      wire.push_back({next, next + n - 1});
      need -= n;
      next += n;
      if (next > ranges[at].last && ++at < ranges.size()) next = ranges[at].first;
    }
    if (need > 0) break;  // the take brought fewer than asked: never expected
    proto::AppendOkNextIds(c.out(), ask.request_id, wire.data(), wire.size());
    c.Queued();
    ++served;
  }
  services_.metrics.CountRequest(Interface::kBinary,
                                 BinaryOpLabel(static_cast<uint8_t>(proto::Opcode::kNextIds)), "ok",
                                 -1, static_cast<int64_t>(served));
  if (served < asks.size()) {  // fails loudly rather than answer short
    const Result<IdBatch> short_take = Error{ErrorCode::kInternal, "run answered short"};
    for (const NextIdsAsk& ask : asks.subspan(served)) WriteIds(c, ask.request_id, short_take);
  }
  c.runs().Release(run);
}

}  // namespace seqd
