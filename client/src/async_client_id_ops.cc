// AsyncClient's ID ops beyond NEXT_IDS (docs/protocol.md, "ID ops"):
// NEXT_BLOCK, NEXT_BLOCK_ONCE, MAX_IDS, GET_MIN_SEQS, SET_MIN_SEQS, USER_SEQS
// and SET_USER_SEQS, encoded with
// proto/id_codec.h and submitted raw (async_client_requests.cc).
#include "async_client_impl.h"
#include "proto/id_codec.h"

namespace seqd::client {
namespace {

// The OK result as a list of i64, exactly `want` of them.
auto Int64List(AsyncClient::Done<std::vector<int64_t>> done, size_t want, const char* op) {
  return [done = std::move(done), want, op](ClientResult<std::string> raw) {
    using R = ClientResult<std::vector<int64_t>>;
    if (!raw.ok()) return done(R(raw.code(), raw.message()));
    std::optional<std::vector<int64_t>> v = proto::ParseInt64List(*raw);
    if (!v || v->size() != want) {
      return done(R(StatusCode::kProtocol, std::string("malformed ") + op + " result"));
    }
    done(R(std::move(*v)));
  };
}

// An empty OK result as true.
auto EmptyOk(AsyncClient::Done<bool> done, const char* op) {
  return [done = std::move(done), op](ClientResult<std::string> raw) {
    using R = ClientResult<bool>;
    if (!raw.ok()) return done(R(raw.code(), raw.message()));
    if (!raw->empty()) {
      return done(R(StatusCode::kProtocol, std::string("malformed ") + op + " result"));
    }
    done(R(true));
  };
}

// The OK result as one block of exactly `count` IDs.
auto Block(AsyncClient::Done<IdRange> done, uint32_t count, const char* op) {
  return [done = std::move(done), count, op](ClientResult<std::string> raw) {
    using R = ClientResult<IdRange>;
    if (!raw.ok()) return done(R(raw.code(), raw.message()));
    std::optional<proto::IdRangeWire> r = proto::ParseNextBlockResult(*raw);
    if (!r || r->last - r->first + 1 != static_cast<int64_t>(count)) {
      return done(R(StatusCode::kProtocol, std::string("malformed ") + op + " result"));
    }
    done(R(IdRange{r->first, r->last}));
  };
}

bool KeysFit(const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    if (k.size() > kMaxKeyBytes) return false;
  }
  return true;
}

// An op whose request is a list of keys and whose answer one i64 a key, in
// order (MAX_IDS, GET_MIN_SEQS). Impl is AsyncClient::Impl, deduced: its
// name is private to AsyncClient.
template <typename Impl>
void SubmitKeyList(Impl& impl, proto::Opcode opcode, const char* op,
                   std::vector<std::string> keys, AsyncClient::Done<std::vector<int64_t>> done) {
  if (!KeysFit(keys)) {
    return impl.Deliver(std::move(done), ClientResult<std::vector<int64_t>>(
                                             StatusCode::kInvalidArgument, "key too long"));
  }
  const size_t n = keys.size();
  std::string body = proto::KeyListPayload({keys.begin(), keys.end()});
  impl.SubmitRaw(opcode, std::move(body), Int64List(std::move(done), n, op));
}

}  // namespace

void AsyncClient::NextBlock(std::string key, uint32_t count, Done<IdRange> done) {
  NextBlockOnBehalf(std::move(key), count, std::string(), std::move(done));
}

void AsyncClient::NextBlockOnBehalf(std::string key, uint32_t count, std::string on_behalf_of,
                                    Done<IdRange> done) {
  if (key.size() > kMaxKeyBytes || on_behalf_of.size() > proto::kMaxOnBehalfOf) {
    return impl_->Deliver(std::move(done), ClientResult<IdRange>(StatusCode::kInvalidArgument,
                                                                 "key or on_behalf_of too long"));
  }
  std::string body = proto::NextBlockRequestPayload(key, count, on_behalf_of);
  impl_->SubmitRaw(proto::kOpNextBlock, std::move(body), Block(std::move(done), count, "NEXT_BLOCK"),
                   std::move(key));
}

void AsyncClient::NextBlockOnce(std::string key, uint32_t count, std::string token,
                                Done<IdRange> done) {
  NextBlockOnceOnBehalf(std::move(key), count, std::move(token), std::string(), std::move(done));
}

void AsyncClient::NextBlockOnceOnBehalf(std::string key, uint32_t count, std::string token,
                                        std::string on_behalf_of, Done<IdRange> done) {
  if (key.size() > kMaxKeyBytes || on_behalf_of.size() > proto::kMaxOnBehalfOf ||
      token.empty() || token.size() > 255) {
    return impl_->Deliver(std::move(done),
                          ClientResult<IdRange>(StatusCode::kInvalidArgument,
                                                "key, token or on_behalf_of empty or too long"));
  }
  std::string body = proto::NextBlockOnceRequestPayload(key, count, token, on_behalf_of);
  impl_->SubmitRaw(proto::kOpNextBlockOnce, std::move(body),
                   Block(std::move(done), count, "NEXT_BLOCK_ONCE"), std::move(key));
}

void AsyncClient::MaxIds(std::vector<std::string> keys, Done<std::vector<int64_t>> done) {
  SubmitKeyList(*impl_, proto::kOpMaxIds, "MAX_IDS", std::move(keys), std::move(done));
}

void AsyncClient::GetMinSeqs(std::vector<std::string> keys, Done<std::vector<int64_t>> done) {
  SubmitKeyList(*impl_, proto::kOpGetMinSeqs, "GET_MIN_SEQS", std::move(keys), std::move(done));
}

void AsyncClient::SetMinSeqs(std::vector<std::pair<std::string, int64_t>> values, Done<bool> done) {
  std::vector<proto::KeyValueView> items;
  items.reserve(values.size());
  for (const auto& [k, v] : values) {
    if (k.size() > kMaxKeyBytes) {
      return impl_->Deliver(std::move(done),
                            ClientResult<bool>(StatusCode::kInvalidArgument, "key too long"));
    }
    items.emplace_back(k, v);
  }
  impl_->SubmitRaw(proto::kOpSetMinSeqs, proto::KeyValueListPayload(items),
                   EmptyOk(std::move(done), "SET_MIN_SEQS"));
}

void AsyncClient::UserSeqs(std::string user, uint8_t field, std::vector<std::string> convs,
                           Done<std::vector<int64_t>> done) {
  if (!KeysFit(convs) || user.size() > kMaxKeyBytes) {
    return impl_->Deliver(std::move(done), ClientResult<std::vector<int64_t>>(
                                               StatusCode::kInvalidArgument, "id too long"));
  }
  const size_t n = convs.size();
  std::string body = proto::UserSeqsPayload(user, field, {convs.begin(), convs.end()});
  impl_->SubmitRaw(proto::kOpUserSeqs, std::move(body),
                   Int64List(std::move(done), n, "USER_SEQS"));
}

void AsyncClient::SetUserSeqs(std::string user, uint8_t field, bool raise_only,
                              std::vector<std::pair<std::string, int64_t>> values,
                              Done<bool> done) {
  std::vector<std::pair<std::string_view, int64_t>> items;
  items.reserve(values.size());
  for (const auto& [conv, v] : values) {
    if (conv.size() > kMaxKeyBytes || user.size() > kMaxKeyBytes) {
      return impl_->Deliver(std::move(done),
                            ClientResult<bool>(StatusCode::kInvalidArgument, "id too long"));
    }
    items.emplace_back(conv, v);
  }
  impl_->SubmitRaw(proto::kOpSetUserSeqs,
                   proto::SetUserSeqsPayload(user, field, raise_only, items),
                   EmptyOk(std::move(done), "SET_USER_SEQS"));
}

}  // namespace seqd::client
