// Message rows as the wire type every interface encodes from
// (proto::MessageView): the one conversion from storage rows, for binary
// answers, pushes and HTTP JSON alike. Encoders never see storage rows.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "proto/message_codec.h"
#include "storage/message_store.h"

namespace seqd {

// The name of a wire status byte ("normal", "recalled", "deleted").
inline std::string_view MessageStatusWireName(uint8_t status) {
  return MessageStatusName(static_cast<MessageStatus>(status));
}

// A view of `m` (it must outlive the view).
inline proto::MessageView MessageWire(const StoredMessage& m) {
  return proto::MessageView{m.seq,           m.server_msg_id, m.sender_id,
                            m.client_msg_id, m.content_type,  static_cast<uint8_t>(m.status),
                            m.send_time_ms,  m.payload};
}

}  // namespace seqd
