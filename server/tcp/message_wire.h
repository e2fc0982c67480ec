// Message rows as the binary protocol's wire types (proto/message_codec.h):
// the one conversion, for answers and pushes alike.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "proto/message_codec.h"
#include "storage/message_store.h"

namespace seqd {

// A view of `m` (it must outlive the view).
inline proto::MessageView MessageWire(const StoredMessage& m) {
  return proto::MessageView{m.seq,           m.server_msg_id, m.sender_id,
                            m.client_msg_id, m.content_type,  static_cast<uint8_t>(m.status),
                            m.send_time_ms,  m.payload};
}

}  // namespace seqd
