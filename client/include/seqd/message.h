// Message store values as the seqd client library reports them
// (docs/protocol.md, "Message store ops"). Plain values. Names differ from
// the server's own types (MessagePage, MemberState, ConvSync) so both can
// be linked into one program.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace seqd::client {

enum class MessageStatus : uint8_t {
  kNormal = 0,
  kRecalled = 1,
  kDeleted = 2,
};

struct Message {
  std::string conv_id;
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  std::string sender_id;
  std::string client_msg_id;
  int32_t content_type = 0;
  MessageStatus status = MessageStatus::kNormal;
  int64_t send_time_ms = 0;
  std::string payload;  // empty for recalled and deleted messages

  bool operator==(const Message&) const = default;
};

// A message to send. Re-sending the same (conv_id, sender_id,
// client_msg_id) stores nothing and answers the first one's values with
// duplicate = true: retry a lost SEND with the same client_msg_id. A
// re-send must carry the same content_type and payload: with others it is
// another message under a used id, refused MESSAGE_ID_CONFLICT (nothing
// stored), unless the stored one was recalled or deleted.
struct OutgoingMessage {
  std::string conv_id;
  std::string sender_id;
  std::string client_msg_id;
  int32_t content_type = 0;
  std::string payload;
};

struct SendResult {
  int64_t seq = 0;
  int64_t server_msg_id = 0;
  int64_t send_time_ms = 0;
  bool duplicate = false;
  bool operator==(const SendResult&) const = default;
};

struct PullOptions {
  int64_t from_seq = 1;
  int64_t to_seq = 0;    // 0: up to the conversation's max
  uint32_t limit = 100;  // 1..1000
  bool descending = false;
  std::string user_id;  // empty: no member window applies
};

struct PullPage {
  std::vector<Message> messages;
  bool is_end = true;  // false: more messages lie in the range beyond the last one
};

struct MemberInfo {
  int64_t min_seq = 1;
  std::optional<int64_t> max_seq;  // none: still a member
  int64_t read_seq = 0;
  bool operator==(const MemberInfo&) const = default;
};

struct ConvState {
  std::string conv_id;
  int64_t max_seq = 0;
  int64_t min_seq = 1;
  int64_t read_seq = 0;
  int64_t unread = 0;
  bool member = false;
  bool operator==(const ConvState&) const = default;
};

}  // namespace seqd::client
