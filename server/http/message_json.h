// A stored message as the HTTP API shows it: one JSON object per message,
// the same in pull answers, long-poll answers and Server-Sent Events.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/service/message_api.h"

namespace seqd {

// {"seq","server_msg_id","sender_id","client_msg_id","content_type",
//  "payload","send_time","status"}, encoded from the wire type
// (server/service/message_wire.h), never from the row.
nlohmann::ordered_json MessageJson(const StoredMessage& m);

// The same as one line of text (no newline: strings are escaped); with
// `conv_id` first when `with_conv` (multi-conversation streams).
std::string MessageJsonText(const StoredMessage& m, bool with_conv);

}  // namespace seqd
