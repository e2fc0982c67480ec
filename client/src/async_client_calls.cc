// AsyncClient's typed message-store and snowflake calls: encode the
// request, submit it (async_client_requests.cc), decode the result
// (async_client_decoding.h).
#include <algorithm>
#include <functional>

#include "async_client_impl.h"
#include "proto/snowflake_codec.h"

namespace seqd::client {

void AsyncClient::Send(OutgoingMessage m, Done<SendResult> done) {
  const bool fit = IdsFit({&m.conv_id, &m.sender_id, &m.client_msg_id});
  auto call = std::make_shared<Call>(impl_->strand);
  call->route_key = m.conv_id;  // cluster mode: straight to the conversation's owner
  impl_->SubmitMessage(proto::SendReq{IdView(fit, m.conv_id), IdView(fit, m.sender_id),
                                      IdView(fit, m.client_msg_id), m.content_type, m.payload},
                       Decoding<proto::SendRes>(
                           std::move(done),
                           [](const proto::SendRes& r) {
                             return SendResult{r.seq, r.server_msg_id, r.send_time_ms, r.duplicate};
                           }),
                       fit, std::move(call));
}

void AsyncClient::Impl::PullRange(std::string conv_id, PullOptions o,
                                  AsyncClient::Done<PullPage> done) {
  const bool fit = IdsFit({&conv_id, &o.user_id});
  SubmitMessage(proto::PullRangeReq{IdView(fit, conv_id), o.from_seq, o.to_seq, o.limit,
                                    o.descending, IdView(fit, o.user_id)},
                Decoding<proto::PullRangeRes>(std::move(done),
                                              [conv_id](const proto::PullRangeRes& r) {
                                                PullPage page;
                                                page.is_end = r.is_end;
                                                page.messages.reserve(r.messages.size());
                                                for (const auto& v : r.messages) {
                                                  page.messages.push_back(ToMessage(conv_id, v));
                                                }
                                                return page;
                                              }),
                fit);
}

void AsyncClient::PullRange(std::string conv_id, PullOptions o, Done<PullPage> done) {
  impl_->PullRange(std::move(conv_id), std::move(o), std::move(done));
}

void AsyncClient::PullSeqs(std::string conv_id, std::vector<int64_t> seqs, std::string user_id,
                           Done<std::vector<Message>> done) {
  const bool fit = IdsFit({&conv_id, &user_id});
  impl_->SubmitMessage(
      proto::PullSeqsReq{IdView(fit, conv_id), IdView(fit, user_id), std::move(seqs)},
      Decoding<proto::PullSeqsRes>(std::move(done),
                                   [conv_id](const proto::PullSeqsRes& r) {
                                     std::vector<Message> out;
                                     out.reserve(r.messages.size());
                                     for (const auto& v : r.messages) {
                                       out.push_back(ToMessage(conv_id, v));
                                     }
                                     return out;
                                   }),
      fit);
}

void AsyncClient::Impl::MaxSeqs(std::vector<std::string> conv_ids,
                                AsyncClient::Done<std::vector<int64_t>> done) {
  bool fit = true;
  proto::MaxSeqsReq req{Views(conv_ids, fit)};
  SubmitMessage(req,
                Decoding<proto::MaxSeqsRes>(std::move(done),
                                            [](const proto::MaxSeqsRes& r) { return r.max_seqs; }),
                fit);
}

void AsyncClient::MaxSeqs(std::vector<std::string> conv_ids, Done<std::vector<int64_t>> done) {
  impl_->MaxSeqs(std::move(conv_ids), std::move(done));
}

void AsyncClient::SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                           Done<std::vector<ConvState>> done) {
  bool fit = IdsFit({&user_id});
  proto::SyncUserReq req{IdView(fit, user_id), Views(conv_ids, fit)};
  impl_->SubmitMessage(req,
                       Decoding<proto::SyncUserRes>(
                           std::move(done),
                           [](const proto::SyncUserRes& r) {
                             std::vector<ConvState> out;
                             out.reserve(r.convs.size());
                             for (const auto& c : r.convs) {
                               out.push_back(ConvState{std::string(c.conv_id), c.max_seq, c.min_seq,
                                                       c.read_seq, c.unread, c.member});
                             }
                             return out;
                           }),
                       fit);
}

void AsyncClient::MarkRead(std::string conv_id, std::string user_id, int64_t read_seq,
                           Done<MemberInfo> done) {
  const bool fit = IdsFit({&conv_id, &user_id});
  impl_->SubmitMessage(proto::MarkReadReq{IdView(fit, conv_id), IdView(fit, user_id), read_seq},
                       MemberDecoding(std::move(done)), fit);
}

void AsyncClient::SetMember(std::string conv_id, std::string user_id,
                            std::optional<int64_t> min_seq, std::optional<int64_t> max_seq,
                            bool clear_max, Done<MemberInfo> done) {
  const bool fit = IdsFit({&conv_id, &user_id});
  impl_->SubmitMessage(
      proto::SetMemberReq{IdView(fit, conv_id), IdView(fit, user_id), min_seq, max_seq, clear_max},
      MemberDecoding(std::move(done)), fit);
}

void AsyncClient::GetMember(std::string conv_id, std::string user_id, Done<MemberInfo> done) {
  const bool fit = IdsFit({&conv_id, &user_id});
  impl_->SubmitMessage(proto::GetMemberReq{IdView(fit, conv_id), IdView(fit, user_id)},
                       MemberDecoding(std::move(done)), fit);
}

void AsyncClient::SetStatus(std::string conv_id, int64_t seq, MessageStatus status,
                            Done<Message> done) {
  if (status == MessageStatus::kNormal) {
    return impl_->Deliver(
        std::move(done),
        ClientResult<Message>(StatusCode::kInvalidArgument, "status must be recalled or deleted"));
  }
  const bool fit = IdsFit({&conv_id});
  impl_->SubmitMessage(proto::SetStatusReq{IdView(fit, conv_id), seq, static_cast<uint8_t>(status)},
                       Decoding<proto::MessageRes>(std::move(done),
                                                   [conv_id](const proto::MessageRes& r) {
                                                     return ToMessage(conv_id, r.message);
                                                   }),
                       fit);
}

void AsyncClient::SetConvMinSeq(std::string conv_id, int64_t min_seq, Done<int64_t> done) {
  const bool fit = IdsFit({&conv_id});
  impl_->SubmitMessage(proto::SetConvMinSeqReq{IdView(fit, conv_id), min_seq},
                       Decoding<proto::MinSeqRes>(
                           std::move(done), [](const proto::MinSeqRes& r) { return r.min_seq; }),
                       fit);
}

void AsyncClient::NextSnowflake(uint32_t count, Done<std::vector<int64_t>> done) {
  impl_->SubmitRaw(proto::kOpSnowflake, proto::SnowflakeRequestPayload(count),
                   [count, done = std::move(done)](ClientResult<std::string> raw) {
                     using R = ClientResult<std::vector<int64_t>>;
                     if (!raw.ok()) return done(R(raw.code(), raw.message()));
                     std::optional<std::vector<int64_t>> ids = proto::ParseSnowflakeResult(*raw);
                     const bool ascending =
                         ids && std::adjacent_find(ids->begin(), ids->end(),
                                                   std::greater_equal<>()) == ids->end();
                     if (!ids || ids->size() != count || !ascending) {
                       return done(R(StatusCode::kProtocol, "malformed SNOWFLAKE result"));
                     }
                     done(R(std::move(*ids)));
                   });
}

void AsyncClient::DecodeSnowflake(int64_t id, Done<DecodedSnowflake> done) {
  impl_->SubmitRaw(proto::kOpSnowflakeDecode, proto::SnowflakeDecodeRequestPayload(id),
                   [done = std::move(done)](ClientResult<std::string> raw) {
                     using R = ClientResult<DecodedSnowflake>;
                     if (!raw.ok()) return done(R(raw.code(), raw.message()));
                     std::optional<proto::SnowflakeFieldsWire> f =
                         proto::ParseSnowflakeDecodeResult(*raw);
                     if (!f)
                       return done(R(StatusCode::kProtocol, "malformed SNOWFLAKE_DECODE result"));
                     done(R(DecodedSnowflake{f->time_ms, f->worker, f->sequence}));
                   });
}

}  // namespace seqd::client
