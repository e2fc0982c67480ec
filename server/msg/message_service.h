// The message store as the network front ends see it: validated, async
// calls over a MessageStore, with seq stamping by group commit.
//
// Stamping: conversations are sharded across `writers` writer threads (one
// writer per conversation in this process). A writer takes every send that
// queued while its previous transaction ran (up to `max_batch`), stores them
// in ONE MessageStore::Append transaction, and only then answers each one.
// Answers carry the seq, the server message id and the send time.
//
// Reads and member/status calls run on `readers` database threads, at most
// `max_queued_reads` waiting.
//
// Limits (kInvalidArgument / kTooLarge with a message naming the field):
// ids follow the key rules (common/key_text.h: 1-255 bytes of UTF-8,
// no control character); payload at most `max_payload_bytes`; pull limit
// 1..kMaxPullLimit; at most kMaxListItems seqs or conversations per batch
// call.
//
// Thread safety: every method may be called from any thread. Callbacks run
// exactly once, on a writer or reader thread (or inline for a rejected
// argument); they must not block. The service must outlive every pending
// callback: Shutdown() answers queued sends with kShuttingDown and joins.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/core/key_rules.h"
#include "server/service/message_api.h"
#include "storage/message_store.h"

namespace seqd {

class SegmentStore;
class Metrics;
class ShardGate;

struct MessageServiceOptions {
  int writers = 2;          // writer threads (conversation shards)
  int readers = 2;          // database threads for reads
  size_t max_batch = 1024;  // messages per group-commit transaction
  size_t max_payload_bytes = 64 * 1024;
  size_t max_queued_sends = 100000;  // beyond this, sends fail kStoreUnavailable
  // An HTTP pull answer carries messages up to about this many bytes of
  // JSON (at least one message), then says where to continue. Binary
  // answers are bounded by the frame size instead.
  size_t max_pull_bytes = 1 << 20;
  // Reads (pulls, members, status, min seq) waiting for a reader thread;
  // beyond this, new ones fail kStoreUnavailable at once. 0: no bound.
  size_t max_queued_reads = 0;
  size_t seq_cache_entries = 1 << 20;  // conversations whose max seq is cached
  Metrics* metrics = nullptr;          // optional; must outlive the service
  // The key rules a write naming a conversation must pass (Send,
  // SetMember, SetConvMinSeq): a rule matches it or it is a registered key,
  // else kUnknownKey (server/msg/conversation_rule.h). None: every
  // conversation is served.
  std::optional<KeyRules> key_rules;
  // Cluster mode (server/core/shard_gate.h): store only sends of
  // conversations whose shard this instance holds (others are answered
  // kWrongOwner), in transactions fenced with the shards' epochs. Optional;
  // must outlive the service.
  ShardGate* gate = nullptr;
};

// Read at scrape time (seqd_message_queued_sends, seqd_message_subscriptions).
struct MessageServiceStats {
  int64_t queued_sends = 0;   // sends waiting for a writer
  int64_t subscriptions = 0;  // (conversation, listener) pairs subscribed
};

class MessageService {
 public:
  template <typename T>
  using Callback = MessageCallback<T>;

  // `store` and `id_store` must outlive the service. Server message ids are
  // reserved in blocks from `id_store` (leaf_alloc key "seqd.server_msg_id",
  // created if missing), so they are unique across processes.
  MessageService(MessageStore& store, SegmentStore& id_store, MessageServiceOptions options);
  ~MessageService();  // calls Shutdown()
  MessageService(const MessageService&) = delete;
  MessageService& operator=(const MessageService&) = delete;

  const MessageServiceOptions& options() const;
  MessageServiceStats stats() const;

  // Stamps and stores one message; answered after its transaction commits.
  // kUnknownKey if the conversation fails `key_rules` (a conversation no
  // rule matches is looked up in leaf_alloc first, on a reader thread).
  // With a gate, kWrongOwner if the conversation's shard is not (or no
  // longer) held here: nothing was stored by this call.
  void Send(SendRequest request, Callback<AppendOutcome> done);

  void Pull(PullRequest request, Callback<MessagePage> done);
  // REQUIRES nothing; at most kMaxListItems seqs. With a user, seqs outside
  // the member's window are left out.
  void PullSeqs(std::string conv_id, std::vector<int64_t> seqs, std::optional<std::string> user_id,
                Callback<std::vector<StoredMessage>> done);
  void MaxSeqs(std::vector<std::string> conv_ids, Callback<std::vector<int64_t>> done);
  void SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                Callback<std::vector<ConvSync>> done);

  // Adds or updates a member (kUnknownKey as Send for the conversation).
  // min_seq defaults to the conversation's max + 1
  // for a new member (it sees only what comes after it joined); max_seq set
  // means the user left or was kicked at that seq. read_seq starts at
  // min_seq - 1. A min_seq above the conversation's max seq + 1 is
  // kInvalidArgument (it would hide messages not sent yet).
  void SetMember(std::string conv_id, std::string user_id, std::optional<int64_t> min_seq,
                 std::optional<int64_t> max_seq, bool clear_max, Callback<MemberView> done);
  void GetMember(std::string conv_id, std::string user_id, Callback<MemberView> done);
  // read_seq must not decrease and must not pass min(conversation max,
  // member max_seq): kFailedPrecondition otherwise.
  void MarkRead(std::string conv_id, std::string user_id, int64_t read_seq,
                Callback<MemberView> done);

  // Recall or delete (status != kNormal). kNotFound for a missing seq.
  void SetStatus(std::string conv_id, int64_t seq, MessageStatus status,
                 Callback<StoredMessage> done);
  // Hides the history before `min_seq`; kInvalidArgument above the
  // conversation's max seq + 1; kUnknownKey as Send.
  void SetConvMinSeq(std::string conv_id, int64_t min_seq, Callback<int64_t> done);

  // A key was just registered (POST /admin/keys): a conversation of that
  // id is served at once, even if it was found unknown a moment ago.
  // Thread-safe; does not block.
  void OnKeyCreated(std::string_view key);

  // Push: `listener` receives every message of `conv_ids` committed from
  // now on. kInvalidArgument for a bad id or more than kMaxListItems.
  Result<std::unique_ptr<Subscription>> Subscribe(const std::vector<std::string>& conv_ids,
                                                  MessageListener listener);

  // Cluster mode: delivers a message committed by another instance (relayed
  // from its owner, server/route/push_relay.h) to this process's
  // subscribers of its conversation.
  void PublishRelayed(const StoredMessage& message);

  // Stops the writers after their current transaction, answers queued
  // sends with kShuttingDown, joins every thread. Idempotent.
  void Shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace seqd
