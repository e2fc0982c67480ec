// The seam's messages: what a listener may ask of the message store, the
// send and the subscription through the conversation's owner
// (server/route/routed_messages.h implements MessageApi over the router and
// the message service; a test may stub it), and the values they carry.
//
// Ids and fields are checked once, by the message service, before anything
// is stored (limits: server/msg/message_service.h).
//
// Thread safety: MessageApi's methods are safe from any thread and never
// block it; each callback runs exactly once, on a writer, reader or timer
// thread (or inline for a rejected argument), and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "server/service/id_api.h"
#include "storage/message_store.h"

namespace seqd {

inline constexpr size_t kMaxPullLimit = 1000;
inline constexpr size_t kMaxListItems = 1000;

// A send: the message's fields as its sender gives them; stored as they
// are (AppendRequest holds them whole).
using SendRequest = MessageFields;

struct PullRequest {
  std::string conv_id;
  int64_t from_seq = 1;
  std::optional<int64_t> to_seq{};  // none: up to the conversation's max
  size_t limit = 100;
  bool descending = false;
  std::optional<std::string> user_id{};  // clamp to this member's window
};

// A member's window as the API reports it.
struct MemberView {
  std::string conv_id;
  std::string user_id;
  MemberState state;
};

// One conversation in a user's login sync.
struct ConvSync {
  std::string conv_id;
  int64_t max_seq = 0;  // the conversation's max, clamped to the user's max_seq
  int64_t min_seq = 1;  // the first seq the user may pull
  int64_t read_seq = 0;
  int64_t unread = 0;   // normal messages in (read_seq, max_seq] not sent by the user
  bool member = false;  // false: the user has no member row (no bounds apply)
};

// Receives committed messages of the conversations it subscribed to, in
// seq order per conversation. Called on a writer thread; must not block.
using MessageListener = std::function<void(const StoredMessage&)>;

// Unsubscribes when destroyed. Safe to destroy on any thread; after the
// destructor returns the listener is never called again.
class Subscription {
 public:
  virtual ~Subscription() = default;
};

template <typename T>
using MessageCallback = std::function<void(Result<T>)>;

class MessageApi {
 public:
  template <typename T>
  using Callback = MessageCallback<T>;

  virtual ~MessageApi() = default;

  // Stamps and stores one message at its conversation's owner; answered
  // after its transaction commits. A re-send (same conversation, sender and
  // client message id) answers the first send's seq, duplicate = true; the
  // same ids with another content_type or payload fail kMessageIdConflict
  // (message_store::ContentDiffers) and store nothing.
  virtual void Send(SendRequest request, Hop hop, Callback<AppendOutcome> done) = 0;
  // Push of `conv` to `listener` from now on, wherever its owner is.
  virtual Result<std::unique_ptr<Subscription>> Subscribe(const std::string& conv, Hop hop,
                                                          MessageListener listener) = 0;

  // Reads of committed rows, answered on any instance.
  virtual void Pull(PullRequest request, Callback<MessagePage> done) = 0;
  virtual void PullSeqs(std::string conv_id, std::vector<int64_t> seqs,
                        std::optional<std::string> user_id,
                        Callback<std::vector<StoredMessage>> done) = 0;
  virtual void MaxSeqs(std::vector<std::string> conv_ids, Callback<std::vector<int64_t>> done) = 0;
  virtual void SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                        Callback<std::vector<ConvSync>> done) = 0;

  // Members, read seqs, statuses and min seqs (MessageService's contracts).
  virtual void SetMember(std::string conv_id, std::string user_id, std::optional<int64_t> min_seq,
                         std::optional<int64_t> max_seq, bool clear_max,
                         Callback<MemberView> done) = 0;
  virtual void GetMember(std::string conv_id, std::string user_id, Callback<MemberView> done) = 0;
  virtual void MarkRead(std::string conv_id, std::string user_id, int64_t read_seq,
                        Callback<MemberView> done) = 0;
  virtual void SetStatus(std::string conv_id, int64_t seq, MessageStatus status,
                         Callback<StoredMessage> done) = 0;
  virtual void SetConvMinSeq(std::string conv_id, int64_t min_seq, Callback<int64_t> done) = 0;

  // The most payload bytes one pull answers with (max_pull_bytes).
  virtual size_t max_pull_bytes() const = 0;
};

}  // namespace seqd
