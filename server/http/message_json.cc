#include "server/http/message_json.h"

#include "server/service/message_wire.h"

namespace seqd {

using Json = nlohmann::ordered_json;

namespace {

void Fill(const proto::MessageView& m, Json& j) {
  j["seq"] = m.seq;
  j["server_msg_id"] = m.server_msg_id;
  j["sender_id"] = m.sender_id;
  j["client_msg_id"] = m.client_msg_id;
  j["content_type"] = m.content_type;
  j["payload"] = m.payload;
  j["send_time"] = m.send_time_ms;
  j["status"] = MessageStatusWireName(m.status);
}

}  // namespace

Json MessageJson(const StoredMessage& m) {
  Json j;
  Fill(MessageWire(m), j);
  return j;
}

std::string MessageJsonText(const StoredMessage& m, bool with_conv) {
  Json j;
  if (with_conv) j["conv_id"] = m.conv_id;
  Fill(MessageWire(m), j);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace seqd
