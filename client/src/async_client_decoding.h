// Between the wire and the public API: the message store's decoded views as
// seqd::client types, typed callbacks over a raw OK result, and the id-size
// checks a request makes before it is encoded. Internal to the client
// library.
//
// Thread safety: free functions over their arguments only.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "async_client_records.h"
#include "proto/message_codec.h"
#include "seqd/client.h"

namespace seqd::client::detail {

inline Message ToMessage(std::string_view conv_id, const proto::MessageView& v) {
  Message m;
  m.conv_id = std::string(conv_id);
  m.seq = v.seq;
  m.server_msg_id = v.server_msg_id;
  m.sender_id = std::string(v.sender_id);
  m.client_msg_id = std::string(v.client_msg_id);
  m.content_type = v.content_type;
  m.status = static_cast<MessageStatus>(v.status);
  m.send_time_ms = v.send_time_ms;
  m.payload = std::string(v.payload);
  return m;
}

inline MemberInfo ToMember(const proto::MemberWire& w) {
  return MemberInfo{w.min_seq, w.max_seq, w.read_seq};
}

// Wraps a typed callback: decodes the raw OK result as Res and converts it.
template <typename Res, typename T, typename Convert>
inline std::function<void(ClientResult<std::string>)> Decoding(
    std::function<void(ClientResult<T>)> done, Convert convert) {
  return [done = std::move(done), convert](ClientResult<std::string> raw) {
    if (!raw.ok()) return done(ClientResult<T>(raw.code(), raw.message()));
    std::optional<Res> res = proto::DecodeBody<Res>(raw.value());
    if (!res) return done(ClientResult<T>(StatusCode::kProtocol, "malformed result"));
    done(ClientResult<T>(convert(*res)));
  };
}

// `id` if the ids fit the wire, else empty (the call fails before sending).
inline std::string_view IdView(bool fit, const std::string& id) {
  return fit ? std::string_view(id) : std::string_view();
}

// True if every id fits the wire's u16 length.
inline bool IdsFit(std::initializer_list<const std::string*> ids) {
  for (const std::string* id : ids) {
    if (id->size() > kMaxKeyBytes) return false;
  }
  return true;
}

inline std::vector<std::string_view> Views(const std::vector<std::string>& v, bool& fit) {
  std::vector<std::string_view> out;
  out.reserve(v.size());
  for (const std::string& s : v) {
    if (s.size() > kMaxKeyBytes) fit = false;
    out.push_back(s);
  }
  if (!fit) out.clear();
  return out;
}

inline auto MemberDecoding(AsyncClient::Done<MemberInfo> done) {
  return Decoding<proto::MemberRes>(std::move(done),
                                    [](const proto::MemberRes& r) { return ToMember(r.member); });
}

}  // namespace seqd::client::detail
