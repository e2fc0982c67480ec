// MessageService: one facade (validation, the writer shards, the reader
// pool and the push bus wired together); each part it drives has a file of
// its own (write_shard, message_bus, server_msg_id_source), and what is
// left here is their wiring.
#include "server/msg/message_service.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <mutex>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/base/task_runner.h"
#include "server/core/key_rules.h"
#include "server/metrics/metrics.h"
#include "server/msg/conversation_rule.h"
#include "server/msg/message_bus.h"
#include "server/msg/server_msg_id_source.h"
#include "server/msg/write_shard.h"

namespace seqd {

namespace {

constexpr int64_t kServerMsgIdBlock = 10000;
constexpr int64_t kNoUpperBound = std::numeric_limits<int64_t>::max();

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

// The characters of the ids an older seqd's MySQL message tables hold at
// most (VARCHAR(128)).
constexpr size_t kOlderTableIdChars = 128;

// `what` names the field in the message ("conv_id: key is empty").
// `keeps_trailing_spaces`: the store's tables are seqd's own, which keep any
// id (MessageStore::KeepsTrailingSpaces); if not, an older seqd's, which
// cannot tell "a" from "a " and hold 128 characters.
Status ValidateIdText(std::string_view what, std::string_view id, bool keeps_trailing_spaces) {
  Status s = ValidateKeyText(id);
  if (s) {
    if (keeps_trailing_spaces) return s;
    const auto chars = std::count_if(id.begin(), id.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
    });
    if (id.ends_with(' ')) {
      return Invalid(std::string(what) +
                     " ends with a space, which this database's tables cannot keep "
                     "(docs/operations.md, \"Keys in MySQL\")");
    }
    if (static_cast<size_t>(chars) > kOlderTableIdChars) {
      return Invalid(std::string(what) + " is longer than the " +
                     std::to_string(kOlderTableIdChars) +
                     " characters this database's tables can keep (docs/operations.md, "
                     "\"Keys in MySQL\")");
    }
    return s;
  }
  std::string message = s.error().message;
  if (message.rfind("key ", 0) == 0) message = message.substr(4);
  return Invalid(std::string(what) + " " + message);
}

Status ValidateIdList(std::string_view what, const std::vector<std::string>& ids,
                      bool keeps_trailing_spaces) {
  if (ids.empty()) return Invalid(std::string(what) + ": the list is empty");
  if (ids.size() > kMaxListItems) {
    return MakeError(ErrorCode::kTooLarge, std::string(what) + ": " + std::to_string(ids.size()) +
                                               " items; the limit is " +
                                               std::to_string(kMaxListItems));
  }
  for (const std::string& id : ids) {
    if (Status s = ValidateIdText(what, id, keeps_trailing_spaces); !s) return s;
  }
  return OkStatus();
}

Error NotMember(std::string_view conv, std::string_view user) {
  return MakeError(ErrorCode::kNotFound, "user '" + std::string(user) +
                                             "' is not a member of conversation '" +
                                             std::string(conv) + "'");
}

// A min_seq may hide at most what exists: up to `max_seq` + 1 (the next
// message). Checked against a max read before the write; the committed max
// only grows, so the bound still holds when the write lands.
Status CheckMinSeq(int64_t min_seq, int64_t max_seq) {
  if (min_seq - 1 <= max_seq) return OkStatus();
  return Invalid("min_seq " + std::to_string(min_seq) +
                 " is above the conversation's max seq + 1 (" + std::to_string(max_seq + 1) + ")");
}

// The seqs a user (or, without a member row, anyone) may see.
struct Window {
  int64_t lower = 1;
  int64_t upper = kNoUpperBound;
};

}  // namespace

struct MessageService::Impl {
  Impl(MessageStore& store_, SegmentStore& id_store, MessageServiceOptions options_)
      : options(options_),
        store(store_),
        conversations(options_.key_rules, id_store),
        ids(id_store, kServerMsgIdBlock),
        readers(static_cast<size_t>(std::max(1, options_.readers)), options_.max_queued_reads) {
    const int writers = std::max(1, options.writers);
    const size_t per_shard = std::max<size_t>(1, options.max_queued_sends / writers);
    for (int i = 0; i < writers; ++i) {
      shards.push_back(std::make_unique<WriteShard>(store, ids, bus, options.max_batch, per_shard,
                                                    options.seq_cache_entries / writers + 1,
                                                    options.metrics, options.gate));
    }
  }

  WriteShard& ShardFor(std::string_view conv) {
    return *shards[std::hash<std::string_view>{}(conv) % shards.size()];
  }

  // Queues a checked send on its conversation's writer.
  void Enqueue(SendRequest request, Callback<AppendOutcome> done) {
    WriteShard& shard = ShardFor(request.conv_id);
    shard.Enqueue({AppendRequest{std::move(request)}, std::move(done)});
  }

  // Answers a send refused before it was queued, and counts it.
  void RefuseSend(Error error, const Callback<AppendOutcome>& done) {
    if (options.metrics) options.metrics->MessageSendError(error.code);
    done(std::move(error));
  }

  // Runs `work` on a reader thread, answering `done` with its result.
  // After Shutdown(), answers kShuttingDown at once; with
  // `max_queued_reads` reads already waiting, kStoreUnavailable at once.
  template <typename T>
  void Read(Callback<T> done, std::function<Result<T>()> work) EXCLUDES(stop_mu) {
    ReaderLock lock(stop_mu);
    if (stopped) return done(MakeError(ErrorCode::kShuttingDown, "server is shutting down"));
    // Copies: a refused task is dropped, and `done` still answers.
    if (readers.TryPost([done, work = std::move(work)] { done(work()); })) return;
    done(MakeError(ErrorCode::kStoreUnavailable, "message read queue full"));
  }

  // The window of `user` in `conv`; kNotFound if not a member.
  Result<Window> UserWindow(const std::string& conv, const std::optional<std::string>& user) {
    Result<int64_t> conv_min = store.GetConvMinSeq(conv);
    if (!conv_min) return conv_min.error();
    Window w;
    w.lower = std::max<int64_t>(1, *conv_min);
    if (!user) return w;
    Result<std::optional<MemberState>> member = store.GetMember(conv, *user);
    if (!member) return member.error();
    if (!*member) return NotMember(conv, *user);
    w.lower = std::max(w.lower, (*member)->min_seq);
    if ((*member)->max_seq) w.upper = *(*member)->max_seq;
    return w;
  }

  // An id's rules (server/core/key_rules.h), and those of the store's
  // tables (MessageStore::KeepsTrailingSpaces).
  Status ValidateId(std::string_view what, std::string_view id) const {
    return ValidateIdText(what, id, store.KeepsTrailingSpaces());
  }
  Status ValidateIds(std::string_view what, const std::vector<std::string>& ids) const {
    return ValidateIdList(what, ids, store.KeepsTrailingSpaces());
  }

  const MessageServiceOptions options;
  MessageStore& store;
  ConversationRule conversations;
  ServerMsgIdSource ids;
  MessageBus bus;
  ThreadPoolRunner readers;
  std::vector<std::unique_ptr<WriteShard>> shards;
  std::once_flag shutdown_once;
  SharedMutex stop_mu;  // held shared while posting a read
  bool stopped GUARDED_BY(stop_mu) = false;
};

MessageService::MessageService(MessageStore& store, SegmentStore& id_store,
                               MessageServiceOptions options)
    : impl_(std::make_unique<Impl>(store, id_store, options)) {}

MessageService::~MessageService() { Shutdown(); }

const MessageServiceOptions& MessageService::options() const { return impl_->options; }

MessageServiceStats MessageService::stats() const {
  MessageServiceStats st;
  for (const auto& shard : impl_->shards) st.queued_sends += static_cast<int64_t>(shard->queued());
  st.subscriptions = static_cast<int64_t>(impl_->bus.subscriber_count());
  return st;
}

void MessageService::Shutdown() {
  std::call_once(impl_->shutdown_once, [this] {
    {
      WriterLock lock(impl_->stop_mu);
      impl_->stopped = true;
    }
    for (auto& shard : impl_->shards) shard->Stop();
    impl_->readers.Stop();
  });
}

void MessageService::Send(SendRequest request, Callback<AppendOutcome> done) {
  Status valid = impl_->ValidateId("conv_id", request.conv_id);
  if (valid) valid = impl_->ValidateId("sender_id", request.sender_id);
  if (valid) valid = impl_->ValidateId("client_msg_id", request.client_msg_id);
  Metrics* metrics = impl_->options.metrics;
  if (!valid) {
    if (metrics) metrics->MessageSendError(valid.error().code);
    return done(valid.error());
  }
  if (request.payload.size() > impl_->options.max_payload_bytes) {
    if (metrics) metrics->MessageSendError(ErrorCode::kTooLarge);
    return done(
        MakeError(ErrorCode::kTooLarge, "payload is " + std::to_string(request.payload.size()) +
                                            " bytes; the limit is " +
                                            std::to_string(impl_->options.max_payload_bytes)));
  }
  Impl* impl = impl_.get();
  switch (impl->conversations.Check(request.conv_id)) {
    case ConversationRule::Verdict::kServed:
      return impl->Enqueue(std::move(request), std::move(done));
    case ConversationRule::Verdict::kUnknown:
      return impl->RefuseSend(UnknownKeyError(request.conv_id), done);
    case ConversationRule::Verdict::kAskStore:
      break;
  }
  // No rule matches: whether the conversation is a registered key is read
  // on a reader thread first.
  std::string conv = request.conv_id;
  impl->Read<Ok>(
      [impl, request = std::move(request), done = std::move(done)](Status served) mutable {
        if (!served) return impl->RefuseSend(served.error(), done);
        impl->Enqueue(std::move(request), std::move(done));
      },
      [impl, conv = std::move(conv)] { return impl->conversations.AskStore(conv); });
}

void MessageService::Pull(PullRequest request, Callback<MessagePage> done) {
  if (Status s = impl_->ValidateId("conv_id", request.conv_id); !s) return done(s.error());
  if (request.user_id) {
    if (Status s = impl_->ValidateId("user_id", *request.user_id); !s) return done(s.error());
  }
  if (request.from_seq < 1) return done(Invalid("from must be at least 1"));
  if (request.to_seq && *request.to_seq < request.from_seq) {
    return done(Invalid("to must not be below from"));
  }
  if (request.limit < 1 || request.limit > kMaxPullLimit) {
    return done(Invalid("limit must be in [1, " + std::to_string(kMaxPullLimit) + "]"));
  }
  Impl* impl = impl_.get();
  impl->Read<MessagePage>(
      std::move(done), [impl, request = std::move(request)]() -> Result<MessagePage> {
        Result<Window> window = impl->UserWindow(request.conv_id, request.user_id);
        if (!window) return window.error();
        RangeQuery q;
        q.conv_id = request.conv_id;
        q.from_seq = std::max(request.from_seq, window->lower);
        q.to_seq = std::min(request.to_seq.value_or(kNoUpperBound), window->upper);
        q.limit = request.limit;
        q.descending = request.descending;
        if (q.from_seq > q.to_seq) return MessagePage{};
        return impl->store.GetRange(q);
      });
}

void MessageService::PullSeqs(std::string conv_id, std::vector<int64_t> seqs,
                              std::optional<std::string> user_id,
                              Callback<std::vector<StoredMessage>> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (user_id) {
    if (Status s = impl_->ValidateId("user_id", *user_id); !s) return done(s.error());
  }
  if (seqs.empty()) return done(Invalid("seqs: the list is empty"));
  if (seqs.size() > kMaxListItems) {
    return done(MakeError(ErrorCode::kTooLarge, "seqs: " + std::to_string(seqs.size()) +
                                                    " items; the limit is " +
                                                    std::to_string(kMaxListItems)));
  }
  for (int64_t seq : seqs) {
    if (seq < 1) return done(Invalid("seqs: every seq must be at least 1"));
  }
  Impl* impl = impl_.get();
  impl->Read<std::vector<StoredMessage>>(
      std::move(done),
      [impl, conv_id = std::move(conv_id), seqs = std::move(seqs),
       user_id = std::move(user_id)]() mutable -> Result<std::vector<StoredMessage>> {
        Result<Window> window = impl->UserWindow(conv_id, user_id);
        if (!window) return window.error();
        std::erase_if(seqs, [&](int64_t s) { return s < window->lower || s > window->upper; });
        if (seqs.empty()) return std::vector<StoredMessage>{};
        return impl->store.GetBySeqs(conv_id, seqs);
      });
}

void MessageService::MaxSeqs(std::vector<std::string> conv_ids,
                             Callback<std::vector<int64_t>> done) {
  if (Status s = impl_->ValidateIds("conv_ids", conv_ids); !s) return done(s.error());
  Impl* impl = impl_.get();
  impl->Read<std::vector<int64_t>>(std::move(done), [impl, conv_ids = std::move(conv_ids)] {
    return impl->store.MaxSeqs(conv_ids);
  });
}

void MessageService::SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                              Callback<std::vector<ConvSync>> done) {
  if (Status s = impl_->ValidateId("user_id", user_id); !s) return done(s.error());
  if (Status s = impl_->ValidateIds("conv_ids", conv_ids); !s) return done(s.error());
  Impl* impl = impl_.get();
  impl->Read<std::vector<ConvSync>>(
      std::move(done),
      [impl, user_id = std::move(user_id),
       conv_ids = std::move(conv_ids)]() -> Result<std::vector<ConvSync>> {
        Result<std::vector<int64_t>> maxes = impl->store.MaxSeqs(conv_ids);
        if (!maxes) return maxes.error();
        std::vector<ConvSync> out;
        out.reserve(conv_ids.size());
        for (size_t i = 0; i < conv_ids.size(); ++i) {
          ConvSync c;
          c.conv_id = conv_ids[i];
          Result<int64_t> conv_min = impl->store.GetConvMinSeq(c.conv_id);
          if (!conv_min) return conv_min.error();
          Result<std::optional<MemberState>> member = impl->store.GetMember(c.conv_id, user_id);
          if (!member) return member.error();
          c.max_seq = (*maxes)[i];
          c.min_seq = std::max<int64_t>(1, *conv_min);
          if (*member) {
            const MemberState& m = **member;
            c.member = true;
            c.min_seq = std::max(c.min_seq, m.min_seq);
            if (m.max_seq) c.max_seq = std::min(c.max_seq, *m.max_seq);
            c.read_seq = m.read_seq;
          }
          const int64_t after = std::max(c.read_seq, c.min_seq - 1);
          if (c.max_seq > after) {
            Result<int64_t> unread = impl->store.CountUnread(c.conv_id, user_id, after, c.max_seq);
            if (!unread) return unread.error();
            c.unread = *unread;
          }
          out.push_back(std::move(c));
        }
        return out;
      });
}

void MessageService::SetMember(std::string conv_id, std::string user_id,
                               std::optional<int64_t> min_seq, std::optional<int64_t> max_seq,
                               bool clear_max, Callback<MemberView> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (Status s = impl_->ValidateId("user_id", user_id); !s) return done(s.error());
  if (min_seq && *min_seq < 1) return done(Invalid("min_seq must be at least 1"));
  if (max_seq && *max_seq < 0) return done(Invalid("max_seq must not be negative"));
  if (max_seq && clear_max) return done(Invalid("max_seq given together with clearing it"));
  Impl* impl = impl_.get();
  impl->Read<MemberView>(std::move(done),
                         [impl, conv_id = std::move(conv_id), user_id = std::move(user_id), min_seq,
                          max_seq, clear_max]() -> Result<MemberView> {
                           if (Status s = impl->conversations.AskStore(conv_id); !s) {
                             return s.error();
                           }
                           Result<std::optional<MemberState>> current =
                               impl->store.GetMember(conv_id, user_id);
                           if (!current) return current.error();
                           MemberState state;
                           std::optional<int64_t> conv_max;
                           if (!*current || min_seq) {
                             Result<int64_t> max = impl->store.MaxSeq(conv_id);
                             if (!max) return max.error();
                             conv_max = *max;
                           }
                           if (*current) {
                             state = **current;
                           } else {
                             state.min_seq = *conv_max + 1;
                           }
                           if (min_seq) {
                             if (Status s = CheckMinSeq(*min_seq, *conv_max); !s) return s.error();
                             state.min_seq = *min_seq;
                           }
                           if (max_seq) state.max_seq = *max_seq;
                           if (clear_max) state.max_seq.reset();
                           if (state.max_seq && *state.max_seq < state.min_seq - 1) {
                             return Invalid("max_seq must not be below min_seq - 1");
                           }
                           state.read_seq = std::max(state.read_seq, state.min_seq - 1);
                           if (state.max_seq)
                             state.read_seq = std::min(state.read_seq, *state.max_seq);
                           if (Status put = impl->store.PutMember(conv_id, user_id, state); !put)
                             return put.error();
                           return MemberView{conv_id, user_id, state};
                         });
}

void MessageService::GetMember(std::string conv_id, std::string user_id,
                               Callback<MemberView> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (Status s = impl_->ValidateId("user_id", user_id); !s) return done(s.error());
  Impl* impl = impl_.get();
  impl->Read<MemberView>(
      std::move(done),
      [impl, conv_id = std::move(conv_id), user_id = std::move(user_id)]() -> Result<MemberView> {
        Result<std::optional<MemberState>> m = impl->store.GetMember(conv_id, user_id);
        if (!m) return m.error();
        if (!*m) return NotMember(conv_id, user_id);
        return MemberView{conv_id, user_id, **m};
      });
}

void MessageService::MarkRead(std::string conv_id, std::string user_id, int64_t read_seq,
                              Callback<MemberView> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (Status s = impl_->ValidateId("user_id", user_id); !s) return done(s.error());
  if (read_seq < 0) return done(Invalid("read_seq must not be negative"));
  Impl* impl = impl_.get();
  impl->Read<MemberView>(
      std::move(done),
      [impl, conv_id = std::move(conv_id), user_id = std::move(user_id),
       read_seq]() -> Result<MemberView> {
        Result<std::optional<MemberState>> m = impl->store.GetMember(conv_id, user_id);
        if (!m) return m.error();
        if (!*m) return NotMember(conv_id, user_id);
        Result<int64_t> max = impl->store.MaxSeq(conv_id);
        if (!max) return max.error();
        int64_t upper = *max;
        if ((*m)->max_seq) upper = std::min(upper, *(*m)->max_seq);
        Result<MemberState> updated = impl->store.SetReadSeq(conv_id, user_id, read_seq, upper);
        if (!updated) return updated.error();
        return MemberView{conv_id, user_id, *updated};
      });
}

void MessageService::SetStatus(std::string conv_id, int64_t seq, MessageStatus status,
                               Callback<StoredMessage> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (seq < 1) return done(Invalid("seq must be at least 1"));
  if (status == MessageStatus::kNormal) {
    return done(Invalid("status must be recalled or deleted"));
  }
  Impl* impl = impl_.get();
  impl->Read<StoredMessage>(std::move(done), [impl, conv_id = std::move(conv_id), seq, status] {
    return impl->store.SetStatus(conv_id, seq, status);
  });
}

void MessageService::SetConvMinSeq(std::string conv_id, int64_t min_seq, Callback<int64_t> done) {
  if (Status s = impl_->ValidateId("conv_id", conv_id); !s) return done(s.error());
  if (min_seq < 1) return done(Invalid("min_seq must be at least 1"));
  Impl* impl = impl_.get();
  impl->Read<int64_t>(std::move(done),
                      [impl, conv_id = std::move(conv_id), min_seq]() -> Result<int64_t> {
                        if (Status s = impl->conversations.AskStore(conv_id); !s) {
                          return s.error();
                        }
                        Result<int64_t> max = impl->store.MaxSeq(conv_id);
                        if (!max) return max.error();
                        if (Status s = CheckMinSeq(min_seq, *max); !s) return s.error();
                        if (Status s = impl->store.SetConvMinSeq(conv_id, min_seq); !s) {
                          return s.error();
                        }
                        return min_seq;
                      });
}

void MessageService::OnKeyCreated(std::string_view key) { impl_->conversations.Forget(key); }

void MessageService::PublishRelayed(const StoredMessage& message) { impl_->bus.Publish(message); }

Result<std::unique_ptr<Subscription>> MessageService::Subscribe(
    const std::vector<std::string>& conv_ids, MessageListener listener) {
  if (Status s = impl_->ValidateIds("conv_ids", conv_ids); !s) return s.error();
  return impl_->bus.Subscribe(conv_ids, std::move(listener));
}

}  // namespace seqd
