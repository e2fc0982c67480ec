// The durable side of the message store: messages stamped with their
// conversation's seq, per-user bounds, and the conversation-wide min seq.
//
// Tables (same names on every backend; see docs/message-store.md):
//   seqd_message     (conv_id, seq) primary key; unique (conv_id, sender_id,
//                    client_msg_id). server_msg_id is unique by construction
//                    (the caller's leaf_alloc reservations); SQLite and the
//                    memory store also index it, MySQL does not (the index
//                    costs ~10% of insert throughput)
//   seqd_conv        conv_id primary key; min_seq
//   seqd_conv_member (conv_id, user_id) primary key; min_seq, max_seq
//                    (NULL: no upper bound), read_seq
// Ids (conv, sender, client message, user) are compared byte for byte.
//
// Thread safety: every implementation is safe to call from many threads at
// once. Calls BLOCK on I/O: run them on database threads only, never on
// network threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"

namespace seqd {

enum class MessageStatus : uint8_t {
  kNormal = 0,
  kRecalled = 1,
  kDeleted = 2,
};

// "normal", "recalled", "deleted".
std::string_view MessageStatusName(MessageStatus status);

struct StoredMessage {
  std::string conv_id;
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  std::string sender_id;
  std::string client_msg_id;
  int32_t content_type = 0;
  std::string payload;  // bytes; empty for recalled and deleted messages
  int64_t send_time_ms = 0;
  MessageStatus status = MessageStatus::kNormal;

  bool operator==(const StoredMessage&) const = default;
};

// A message as its sender gives it (a send's request at the seam:
// SendRequest, server/service/message_api.h).
struct MessageFields {
  std::string conv_id;
  std::string sender_id;
  std::string client_msg_id;
  int32_t content_type = 0;
  std::string payload;
};

// A message to store: the sender's fields, with a server_msg_id the caller
// chose globally unique. The caller has validated every field; the store
// chooses the seq.
struct AppendRequest : MessageFields {
  int64_t server_msg_id = 0;
  int64_t send_time_ms = 0;
};

// What the sender is told. For a duplicate (a re-send), these are the values
// of the message stored first, and nothing new was stored. A message already
// stored with the request's own server_msg_id is not a duplicate: an earlier
// try of this very request stored it (a COMMIT whose outcome was unknown, or
// a failure reported after the commit), so Append may be run again with the
// same requests and answers as if the first try had succeeded.
//
// A conflict is a duplicate whose request carries other content than the
// message stored under its client key (message_store::ContentDiffers): not
// a re-send but another message under a used id. Nothing was stored for it
// either; the sender must be refused (kMessageIdConflict), not told the
// stored message's seq as if it were its own.
struct AppendOutcome {
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  int64_t send_time_ms = 0;
  bool duplicate = false;
  bool conflict = false;  // implies duplicate

  bool operator==(const AppendOutcome&) const = default;
};

// Cluster mode's fences for one Append (MessageStore::AppendFenced).
struct AppendFencing {
  std::vector<ShardFence> fences;   // in: one per shard
  std::optional<uint32_t> refused;  // out: the shard found no longer ours
};

// The caller's knowledge of each conversation's committed max seq
// (conv_id -> max seq). See MessageStore::Append.
using MaxSeqCache = std::unordered_map<std::string, int64_t>;

struct RangeQuery {
  std::string conv_id;
  int64_t from_seq = 1;  // inclusive
  int64_t to_seq = 0;    // inclusive; REQUIRES from_seq <= to_seq
  size_t limit = 100;    // REQUIRES >= 1
  bool descending = false;
};

struct MessagePage {
  std::vector<StoredMessage> messages;  // in the order asked for
  // True if messages in [from_seq, to_seq] exist beyond those returned
  // (after the last one in the direction of the query).
  bool more = false;
};

struct MemberState {
  int64_t min_seq = 1;             // first seq the user may see
  std::optional<int64_t> max_seq;  // last seq the user may see; none: no bound
  int64_t read_seq = 0;            // last seq the user has read

  bool operator==(const MemberState&) const = default;
};

class MessageStore {
 public:
  virtual ~MessageStore() = default;

  // Creates the three tables if missing. Idempotent.
  virtual Status EnsureSchema() = 0;

  // False if ids that differ only by trailing spaces would share rows
  // (MySQL tables made by an older seqd, whose id columns pad spaces): the
  // service then refuses ids that end with a space. Read after
  // EnsureSchema(). Thread-safe.
  virtual bool KeepsTrailingSpaces() const { return true; }

  // Stores `batch` in ONE transaction, all or nothing, and returns one
  // outcome per request, in order.
  //
  // For each request in order: if (conv_id, sender_id, client_msg_id) is
  // already stored (by anyone, or earlier in this batch), its outcome is
  // that message's, with duplicate = true, and it takes no seq; conflict =
  // true as well if ContentDiffers(request, that message) (the message
  // stored under the key, whether it was stored before the batch or by an
  // earlier request of it). Either way the rest of the batch is stored as
  // if the request were absent. Otherwise it
  // is stored with seq = the conversation's committed max seq + 1, where the
  // max counts every row stored by any process and the rows stored earlier
  // in this batch. So seqs are contiguous from 1 with no holes, even when
  // several processes write one conversation.
  //
  // `max_seq_cache`: the caller's cache. The store may trust an entry
  // instead of reading the max; a stale (too low) entry costs a retry,
  // never a wrong seq, because the primary key rejects the row and the store
  // then reads the true max. On success the entries of the batch's
  // conversations hold their new committed max; on failure they are erased.
  //
  // Errors: kStoreUnavailable (I/O, lock timeouts, or the outcome of the
  // commit is unknown; re-sending is safe since duplicates are detected),
  // kInternal. On error the caller must assume nothing was acknowledged.
  virtual Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                                    MaxSeqCache& max_seq_cache) = 0;

  // Cluster mode: Append in a transaction that first writes each shard's
  // lease row conditioned on `fencing.fences` (storage/segment_store.h's
  // ShardFence; one per shard of the batch's conversations). If any lease
  // is no longer ours, nothing is stored: kNotServing, with the shard in
  // `fencing.refused`. Stores without cluster support answer
  // kFailedPrecondition.
  virtual Result<std::vector<AppendOutcome>> AppendFenced(std::span<const AppendRequest> batch,
                                                          MaxSeqCache& max_seq_cache,
                                                          AppendFencing& fencing) {
    (void)batch, (void)max_seq_cache, (void)fencing;
    return NoClusterMode();
  }

  // The committed max seq of a conversation; 0 if it has no message.
  virtual Result<int64_t> MaxSeq(std::string_view conv_id) = 0;

  // Max seqs of many conversations, in the order given (0 for none).
  virtual Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string> conv_ids) = 0;

  virtual Result<MessagePage> GetRange(const RangeQuery& query) = 0;

  // The messages among `seqs` that exist, ascending by seq, each once.
  virtual Result<std::vector<StoredMessage>> GetBySeqs(std::string_view conv_id,
                                                       std::span<const int64_t> seqs) = 0;

  // Marks a message recalled or deleted and clears its payload; the row
  // stays, so seqs stay contiguous. Returns the updated message.
  // kNotFound if there is no such message. REQUIRES: status != kNormal.
  virtual Result<StoredMessage> SetStatus(std::string_view conv_id, int64_t seq,
                                          MessageStatus status) = 0;

  // Conversation-wide min seq (history before it is hidden); 1 if never set.
  virtual Result<int64_t> GetConvMinSeq(std::string_view conv_id) = 0;
  virtual Status SetConvMinSeq(std::string_view conv_id, int64_t min_seq) = 0;

  // A member's bounds; nullopt if the user was never added.
  virtual Result<std::optional<MemberState>> GetMember(std::string_view conv_id,
                                                       std::string_view user_id) = 0;
  // Inserts or replaces the member's row.
  virtual Status PutMember(std::string_view conv_id, std::string_view user_id,
                           const MemberState& state) = 0;

  // Atomically sets read_seq if `read_seq` >= the stored read_seq and
  // <= `upper`. kFailedPrecondition naming the rule otherwise; kNotFound if
  // the user is not a member. Returns the new state.
  virtual Result<MemberState> SetReadSeq(std::string_view conv_id, std::string_view user_id,
                                         int64_t read_seq, int64_t upper) = 0;

  // Messages with after_seq < seq <= upto_seq, status normal, not sent by
  // `user_id`.
  virtual Result<int64_t> CountUnread(std::string_view conv_id, std::string_view user_id,
                                      int64_t after_seq, int64_t upto_seq) = 0;

  // Cheap round trip proving the store answers.
  virtual Status Ping() = 0;
};

// ---- For the implementations: the argument checks every store makes alike.
namespace message_store {

// kInvalidArgument unless from_seq <= to_seq and limit >= 1 (GetRange).
Status CheckRange(const RangeQuery& query);
// kInvalidArgument for kNormal (SetStatus).
Status CheckNewStatus(MessageStatus status);

// True if `request` is not a re-send of the message stored under its client
// key, whose content_type, payload and status are `stored_content_type`,
// `stored_payload` and `stored_status`: another content_type, or other
// payload bytes. The other fields a send carries are the client key itself
// (equal by definition); the seq, server message id and send time are the
// server's. A recalled or deleted message has lost its payload and differs
// from nothing: a re-send of it stays a duplicate, whatever its content.
bool ContentDiffers(const MessageFields& request, int32_t stored_content_type,
                    std::string_view stored_payload, MessageStatus stored_status);

}  // namespace message_store
}  // namespace seqd
