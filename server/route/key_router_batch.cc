// KeyRouter: requests over many keys (MAX_IDS, SET_MIN_SEQS). In cluster
// mode the keys are split by owner: the part held here is served here,
// each other owner's part is forwarded to it at once (NO_FORWARD), and the
// keys without an owner yet wait, as a keyed request does. A part that
// comes back kWrongOwner (moved, fenced out, or not answered) is split and
// routed again, until the wait deadline. The request is answered once every
// part is, with the values in the order asked, or with the first error.
#include <map>

#include "common/mutex.h"
#include "server/cluster/cluster_metrics.h"
#include "server/cluster/cluster_node.h"
#include "server/route/key_router.h"
#include "server/route/peer_clients.h"

namespace seqd {
namespace {

constexpr auto kRetryInterval = std::chrono::milliseconds(10);

bool Moved(const Error& e) { return e.code == ErrorCode::kWrongOwner; }

}  // namespace

// One request over many keys. Its parts answer on any thread: `mu` guards
// what they write.
struct KeyRouter::BatchJob {
  using PartDone = ValuesCallback;
  std::vector<std::string> keys;
  Hop hop = Hop::kMayForward;
  Clock::TimePoint deadline;
  // Serve keys[i] for each i of `part` here, or at the owner on `address`;
  // the values in part's order (none for a write).
  std::function<void(const std::vector<size_t>& part, PartDone)> local;
  std::function<void(const std::string& address, const std::vector<size_t>& part, PartDone)>
      forward;
  ValuesCallback done;  // runs once
  Mutex mu;
  size_t pending GUARDED_BY(mu) = 1;  // parts not answered yet
  bool finished GUARDED_BY(mu) = false;
  std::vector<int64_t> values GUARDED_BY(mu);
};

void KeyRouter::MaxIds(std::vector<std::string> keys, Hop hop, ValuesCallback done) {
  if (!cluster_) return ids_.MaxIds(std::move(keys), std::move(done));
  // Bad requests are answered here, never forwarded.
  if (Status s = SegmentAllocator::CheckKeyList(keys); !s) return done(s.error());
  auto job = std::make_shared<BatchJob>();
  job->keys = std::move(keys);
  job->hop = hop;
  job->deadline = clock_->Now() + ids_.options().wait_deadline;
  job->done = std::move(done);
  {
    MutexLock lock(job->mu);
    job->values.assign(job->keys.size(), 0);
  }
  const BatchJob* raw = job.get();  // the parts run while the job lives
  job->local = [this, raw](const std::vector<size_t>& part, BatchJob::PartDone answer) {
    std::vector<std::string> keys;
    for (size_t i : part) keys.push_back(raw->keys[i]);
    ids_.MaxIds(std::move(keys), std::move(answer));
  };
  job->forward = [this, raw](const std::string& address, const std::vector<size_t>& part,
                             BatchJob::PartDone answer) {
    std::vector<std::string> keys;
    for (size_t i : part) keys.push_back(raw->keys[i]);
    peers_->MaxIds(address, std::move(keys), std::move(answer));
  };
  std::vector<size_t> all(job->keys.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  RouteParts(std::move(job), std::move(all));
}

void KeyRouter::MaxIdsWithTimes(std::vector<std::string> keys, Hop hop,
                                MaxIdsTimesCallback done) {
  auto asked = std::make_shared<std::vector<std::string>>(keys);
  MaxIds(std::move(keys), hop,
         [this, asked, done = std::move(done)](Result<std::vector<int64_t>> max_ids) mutable {
           if (!max_ids) return done(max_ids.error());
           ids_.GetAllocTimes(std::move(*asked),
                              [max_ids = std::move(*max_ids), done = std::move(done)](
                                  Result<std::vector<int64_t>> times) mutable {
                                if (!times) return done(times.error());
                                done(MaxIdsTimes{std::move(max_ids), std::move(*times)});
                              });
         });
}

void KeyRouter::GetUserSeqs(std::string user, UserSeqField field, std::vector<std::string> convs,
                            ValuesCallback done) {
  ids_.GetUserSeqs(std::move(user), field, std::move(convs), std::move(done));
}

void KeyRouter::SetUserSeqs(std::string user, UserSeqField field, bool raise_only,
                            std::vector<UserSeqValue> values, std::function<void(Status)> done) {
  ids_.SetUserSeqs(std::move(user), field, raise_only, std::move(values), std::move(done));
}

void KeyRouter::GetMinSeqs(std::vector<std::string> keys, ValuesCallback done) {
  ids_.GetMinSeqs(std::move(keys), std::move(done));
}

void KeyRouter::SetMinSeqs(std::vector<MinSeqValue> values, Hop hop,
                           std::function<void(Status)> done) {
  if (!cluster_) return ids_.SetMinSeqs(std::move(values), std::move(done));
  if (Status s = SegmentAllocator::CheckMinSeqList(values); !s) return done(s);
  auto job = std::make_shared<BatchJob>();
  auto shared_values = std::make_shared<const std::vector<MinSeqValue>>(std::move(values));
  for (const MinSeqValue& v : *shared_values) job->keys.push_back(v.key);
  job->hop = hop;
  job->deadline = clock_->Now() + ids_.options().wait_deadline;
  job->done = [done = std::move(done)](Result<std::vector<int64_t>> r) {
    if (!r) return done(r.error());
    done(OkStatus());
  };
  auto pick = [shared_values](const std::vector<size_t>& part) {
    std::vector<MinSeqValue> out;
    out.reserve(part.size());
    for (size_t i : part) out.push_back((*shared_values)[i]);
    return out;
  };
  auto as_values = [](BatchJob::PartDone answer) {
    return [answer = std::move(answer)](Status s) {
      if (!s) return answer(s.error());
      answer(std::vector<int64_t>{});
    };
  };
  job->local = [this, pick, as_values](const std::vector<size_t>& part, BatchJob::PartDone answer) {
    ids_.SetMinSeqs(pick(part), as_values(std::move(answer)));
  };
  job->forward = [this, pick, as_values](const std::string& address,
                                         const std::vector<size_t>& part,
                                         BatchJob::PartDone answer) {
    peers_->SetMinSeqs(address, pick(part), as_values(std::move(answer)));
  };
  std::vector<size_t> all(job->keys.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  RouteParts(std::move(job), std::move(all));
}

void KeyRouter::RouteParts(std::shared_ptr<BatchJob> job, std::vector<size_t> part) {
  // `part` holds one of the job's pending slots; its pieces take their own
  // before it gives it back.
  std::vector<size_t> here, waiting;
  std::map<std::string, std::vector<size_t>> elsewhere;
  for (size_t i : part) {
    const std::string& key = job->keys[i];
    if (cluster_->Check(key).serving()) {
      here.push_back(i);
      continue;
    }
    const ShardRoute route = cluster_->Route(key);
    if (!route.mine && route.owner_live && !route.advertise.empty()) {
      if (job->hop == Hop::kNoForward) {
        cluster_->RefreshSoon();  // one of the maps is stale, perhaps ours
        if (metrics_) metrics_->WrongOwner();
        return FinishPart(job, MakeError(ErrorCode::kWrongOwner, "another instance owns a key"));
      }
      elsewhere[route.advertise].push_back(i);
      continue;
    }
    if (route.released && route.mine) cluster_->RefreshSoon();
    waiting.push_back(i);
  }
  {
    MutexLock lock(job->mu);
    job->pending += (here.empty() ? 0 : 1) + elsewhere.size() + (waiting.empty() ? 0 : 1);
  }
  // What a part's answer does: its values in place, or routed again.
  auto answer = [this, job](std::vector<size_t> piece, bool forwarded) {
    return [this, job, piece = std::move(piece), forwarded](Result<std::vector<int64_t>> r) {
      if (forwarded && metrics_) metrics_->Forwarded(!(!r && Moved(r.error())));
      if (!r && Moved(r.error())) {
        if (forwarded) cluster_->RefreshSoon();  // our map named an owner that is not
        return RetryPart(job, piece);
      }
      if (!r) return FinishPart(job, r.error());
      {
        MutexLock lock(job->mu);
        if (r->size() == piece.size()) {
          for (size_t j = 0; j < piece.size(); ++j) job->values[piece[j]] = (*r)[j];
        }
      }
      FinishPart(job, std::nullopt);
    };
  };
  if (!here.empty()) job->local(here, answer(here, false));
  for (auto& [address, piece] : elsewhere) job->forward(address, piece, answer(piece, true));
  if (!waiting.empty()) RetryPart(job, std::move(waiting));
  FinishPart(job, std::nullopt);  // this part's own slot
}

void KeyRouter::RetryPart(std::shared_ptr<BatchJob> job, std::vector<size_t> part) {
  const Clock::TimePoint next = clock_->Now() + kRetryInterval;
  if (next >= job->deadline) {
    return FinishPart(job, MakeError(ErrorCode::kStoreUnavailable,
                                     "no instance serves a key's shard now; retry"));
  }
  if (metrics_) metrics_->WaitedForOwner();
  clock_->RunAt(next, [this, job = std::move(job), part = std::move(part)]() mutable {
    RouteParts(std::move(job), std::move(part));
  });
}

void KeyRouter::FinishPart(const std::shared_ptr<BatchJob>& job, std::optional<Error> error) {
  std::optional<Result<std::vector<int64_t>>> answer;
  {
    MutexLock lock(job->mu);
    --job->pending;
    if (job->finished) return;
    if (error) {
      answer.emplace(std::move(*error));
    } else if (job->pending == 0) {
      answer.emplace(std::move(job->values));
    } else {
      return;
    }
    job->finished = true;
  }
  job->done(std::move(*answer));
}

}  // namespace seqd
