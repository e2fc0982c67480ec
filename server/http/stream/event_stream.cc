#include "server/http/stream/event_stream.h"

#include <utility>

#include "server/base/clock.h"
#include "server/base/log.h"
#include "server/http/stream/event_sink.h"
#include "server/http/message_json.h"
#include "server/http/stream/sse_wire.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"

namespace seqd {

EventStream::EventStream(Deps deps, EventStreamOptions options, bool multi,
                         std::optional<std::string> user)
    : deps_(deps), options_(options), multi_(multi), user_(std::move(user)) {}

EventStream::~EventStream() = default;

Result<std::shared_ptr<EventStream>> EventStream::Create(Deps deps, EventStreamOptions options,
                                                         std::vector<StreamConv> convs, bool multi,
                                                         std::optional<std::string> user) {
  const bool from_store = user.has_value();
  std::shared_ptr<EventStream> s(new EventStream(deps, options, multi, std::move(user)));
  std::vector<std::unique_ptr<Subscription>> subscriptions;
  // Subscribe first: whatever is committed from now on is pushed (and kept
  // until the start is known), so nothing falls between replay and push.
  for (size_t i = 0; i < convs.size(); ++i) {
    std::weak_ptr<EventStream> weak = s;
    Result<std::unique_ptr<Subscription>> sub = deps.messages.Subscribe(
        convs[i].conv_id, Hop::kMayForward, [weak, i](const StoredMessage& m) {
          if (auto self = weak.lock()) self->OnLive(i, m);
        });
    if (!sub) return sub.error();
    subscriptions.push_back(std::move(sub).value());
  }
  MutexLock lock(s->mu_);
  for (size_t i = 0; i < convs.size(); ++i) {
    s->convs_.push_back(Conv{std::move(convs[i].conv_id), convs[i].last,
                             ConvResume(from_store, options.max_kept), 0,
                             std::move(subscriptions[i])});
  }
  return s;
}

void EventStream::Run(std::shared_ptr<EventSink> sink, std::unique_ptr<StreamLimits::Slot> slot) {
  std::vector<std::string> unknown;  // conversations that start from now
  {
    MutexLock lock(mu_);
    if (running_) return;
    running_ = true;
    sink_ = sink;
    slot_ = std::move(slot);
    if (deps_.metrics) deps_.metrics->StreamOpened();
    for (const Conv& c : convs_) {
      if (!c.start) unknown.push_back(c.id);
    }
  }
  // The sink owns the stream until it ends (the cycle is broken by End()).
  sink->SetOnEnd([self = shared_from_this()] { self->OnEnd(); });
  sink->SetOnRoom([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Pump();
  });
  ArmHeartbeat();
  if (unknown.empty()) return OnStartPoints(std::vector<int64_t>());
  AskMaxSeqs(std::move(unknown), &EventStream::OnStartPoints);
}

void EventStream::AskMaxSeqs(std::vector<std::string> convs, MaxSeqsHandler then) {
  deps_.messages.MaxSeqs(std::move(convs),
                         [self = shared_from_this(), then](Result<std::vector<int64_t>> r) {
                           ((*self).*then)(std::move(r));
                         });
}

void EventStream::OnStartPoints(Result<std::vector<int64_t>> max_seqs) {
  std::vector<PullAsk> asks;
  {
    MutexLock lock(mu_);
    StartLocked(std::move(max_seqs), asks);
  }
  Ask(std::move(asks));
}

void EventStream::StartLocked(Result<std::vector<int64_t>> max_seqs, std::vector<PullAsk>& asks) {
  if (ended_) return;
  if (!max_seqs) {
    SEQD_LOG(kDebug) << "sse: start points failed: " << max_seqs.error().message;
    return EndLocked();
  }
  size_t next = 0;
  for (Conv& c : convs_) {
    if (!c.start) {
      if (next >= max_seqs->size()) return EndLocked();
      c.start = (*max_seqs)[next++];
    }
    c.sent = *c.start;
    c.resume.Start(*c.start);
  }
  // The first bytes, once every start is fixed: a client that waits for
  // them gets everything committed after (docs/http-api.md).
  sink_->WriteUnbounded(SseRetry(options_.retry.count()));
  DuePullsLocked(asks);
}

void EventStream::Pump() {
  std::vector<PullAsk> asks;
  {
    MutexLock lock(mu_);
    DuePullsLocked(asks);
  }
  Ask(std::move(asks));
}

void EventStream::OnLive(size_t conv, const StoredMessage& m) {
  std::vector<PullAsk> asks;
  {
    MutexLock lock(mu_);
    if (ended_ || conv >= convs_.size()) return;
    Conv& c = convs_[conv];
    std::vector<StoredMessage> out;
    c.resume.OnLive(m, out);
    if (!running_ || !c.resume.started()) return;  // kept until the start is known
    if (!out.empty()) SendLocked(conv, out, /*bounded=*/true);
    DuePullsLocked(asks);
  }
  Ask(std::move(asks));
}

void EventStream::DuePullsLocked(std::vector<PullAsk>& asks) {
  if (ended_ || closing_ || !sink_) return;
  for (size_t i = 0; i < convs_.size(); ++i) {
    Conv& c = convs_[i];
    if (!c.resume.WantsPull() || !sink_->HasRoom()) continue;
    PullRequest req;
    req.conv_id = c.id;
    req.from_seq = c.resume.PullStarted();
    req.limit = options_.pull_limit;
    req.user_id = user_;
    asks.push_back(PullAsk{i, std::move(req)});
  }
}

void EventStream::Ask(std::vector<PullAsk> asks) {
  if (asks.empty()) return;
  auto self = shared_from_this();
  for (PullAsk& ask : asks) {
    const size_t conv = ask.conv;
    deps_.messages.Pull(std::move(ask.request), [self, conv](Result<MessagePage> page) {
      self->OnPulled(conv, std::move(page));
    });
  }
}

void EventStream::OnPulled(size_t conv, Result<MessagePage> page) {
  std::vector<PullAsk> asks;
  {
    MutexLock lock(mu_);
    if (ended_ || conv >= convs_.size()) return;
    if (!page) {
      // The store failed: end; the client resumes from its last event.
      SEQD_LOG(kDebug) << "sse: replay pull failed: " << page.error().message;
      return EndLocked();
    }
    std::vector<StoredMessage> out;
    convs_[conv].resume.OnPulled(page->messages, page->more, out);
    if (!out.empty()) SendLocked(conv, out, /*bounded=*/false);
    DuePullsLocked(asks);
  }
  Ask(std::move(asks));
}

std::string EventStream::LastIdLocked() const {
  if (!multi_) return convs_.empty() ? std::string() : std::to_string(convs_[0].sent);
  ResumePoints points;
  points.reserve(convs_.size());
  for (const Conv& c : convs_) points.emplace_back(c.id, c.sent);
  return EncodeResumeToken(points);
}

void EventStream::SendLocked(size_t conv, const std::vector<StoredMessage>& messages,
                             bool bounded) {
  if (ended_ || closing_ || !sink_) return;
  Conv& c = convs_[conv];
  scratch_.clear();
  const int64_t sent_before = c.sent;
  for (const StoredMessage& m : messages) {
    c.sent = m.seq;
    AppendSseMessage(LastIdLocked(), MessageJsonText(m, multi_), scratch_);
  }
  if (!bounded) {
    sink_->WriteUnbounded(scratch_);
  } else if (!sink_->Write(scratch_)) {
    c.sent = sent_before;  // not queued
    return DroppedLocked();
  }
  if (deps_.metrics) deps_.metrics->EventsSent(static_cast<int64_t>(messages.size()));
}

void EventStream::DroppedLocked() {
  if (ended_ || closing_) return;
  if (deps_.metrics) deps_.metrics->SlowReaderClosed();
  if (sink_) sink_->CloseAfter(SseDropped(LastIdLocked()));
  EndLocked();
}

void EventStream::EndLocked() {
  closing_ = true;
  if (sink_) sink_->CloseAfter("");
  // The subscriptions and the slot go when the sink reports the end
  // (OnEnd): after the connection wrote what was queued.
}

void EventStream::Close() {
  MutexLock lock(mu_);
  EndLocked();
}

void EventStream::Heartbeat() {
  std::vector<std::string> convs;
  {
    MutexLock lock(mu_);
    if (ended_ || closing_ || !sink_) return;
    if (!sink_->Write(kSseHeartbeat)) return DroppedLocked();
    if (options_.check_max_on_heartbeat) {
      for (const Conv& c : convs_) {
        if (!c.resume.live()) return ArmHeartbeat();  // catching up: no need
        convs.push_back(c.id);
      }
    }
  }
  ArmHeartbeat();
  if (convs.empty()) return;
  AskMaxSeqs(std::move(convs), &EventStream::OnMaxSeqs);
}

void EventStream::OnMaxSeqs(Result<std::vector<int64_t>> max_seqs) {
  std::vector<PullAsk> asks;
  {
    MutexLock lock(mu_);
    if (ended_ || !max_seqs || max_seqs->size() != convs_.size()) return;  // next heartbeat
    for (size_t i = 0; i < convs_.size(); ++i) convs_[i].resume.NoteMaxSeq((*max_seqs)[i]);
    DuePullsLocked(asks);
  }
  Ask(std::move(asks));
}

void EventStream::ArmHeartbeat() {
  if (!deps_.clock || options_.heartbeat.count() <= 0) return;
  deps_.clock->RunAt(deps_.clock->Now() + options_.heartbeat, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Heartbeat();
  });
}

void EventStream::EndWhenRevoked(const Authenticator* auth, Access access, Permission permission) {
  if (!auth || !auth->enabled()) return;
  std::unique_ptr<Authenticator::ReloadWatch> watch = auth->OnReload([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->Recheck();
  });
  MutexLock lock(mu_);
  auth_ = auth;
  access_ = std::move(access);
  permission_ = permission;
  reload_watch_ = std::move(watch);
}

void EventStream::Recheck() {
  MutexLock lock(mu_);
  if (ended_ || closing_ || !access_) return;
  access_->Revalidate(auth_);
  std::string_view reason;
  if (!access_->principal()) {
    access_->AuditUnauthenticated("msg_events");
    reason = "unauthenticated";
  } else {
    for (const Conv& c : convs_) {
      if (!access_->Check(permission_, c.id, "msg_events")) {
        reason = "permission_denied";
        break;
      }
    }
  }
  if (reason.empty()) return;
  if (sink_) sink_->CloseAfter(SseDropped(LastIdLocked(), reason));
  EndLocked();
}

void EventStream::OnEnd() {
  std::vector<std::unique_ptr<Subscription>> subscriptions;
  std::unique_ptr<StreamLimits::Slot> slot;
  std::shared_ptr<EventSink> sink;
  std::unique_ptr<Authenticator::ReloadWatch> watch;
  {
    MutexLock lock(mu_);
    if (ended_) return;
    ended_ = true;
    for (Conv& c : convs_) subscriptions.push_back(std::move(c.subscription));
    slot = std::move(slot_);
    sink = std::move(sink_);
    watch = std::move(reload_watch_);
    if (deps_.metrics && running_) deps_.metrics->StreamClosed();
  }
  // Unsubscribing waits for a listener call under way: outside the lock.
}

}  // namespace seqd
