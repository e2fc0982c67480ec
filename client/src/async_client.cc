// AsyncClient's entry points: construction, NextIds (with prefetch), Ping,
// Subscribe, Unsubscribe and Close over the transport (async_client_impl.h).
#include "async_client_impl.h"
#include "proto/shard_hash.h"

namespace seqd::client {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kUnknownKey:
      return "UNKNOWN_KEY";
    case StatusCode::kKeyExists:
      return "KEY_EXISTS";
    case StatusCode::kStoreUnavailable:
      return "STORE_UNAVAILABLE";
    case StatusCode::kShuttingDown:
      return "SHUTTING_DOWN";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnknownOpcode:
      return "UNKNOWN_OPCODE";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kTooLarge:
      return "TOO_LARGE";
    case StatusCode::kNotServing:
      return "NOT_SERVING";
    case StatusCode::kWrongOwner:
      return "WRONG_OWNER";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kMalformedFrame:
      return "MALFORMED_FRAME";
    case StatusCode::kUnsupportedVersion:
      return "UNSUPPORTED_VERSION";
    case StatusCode::kFrameTooLarge:
      return "FRAME_TOO_LARGE";
    case StatusCode::kTimeout:
      return "TIMEOUT";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kProtocol:
      return "PROTOCOL";
    case StatusCode::kCancelled:
      return "CANCELLED";
  }
  return "UNKNOWN_STATUS";
}

AsyncClient::AsyncClient(asio::any_io_executor executor, ClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(options))) {}

AsyncClient::~AsyncClient() { Close(); }

const ClientOptions& AsyncClient::options() const { return impl_->options; }

void AsyncClient::NextIds(std::string key, uint32_t count,
                          std::function<void(ClientResult<IdBatch>)> done) {
  if (key.size() > kMaxKeyBytes) {
    return impl_->Deliver(
        std::move(done),
        ClientResult<IdBatch>(StatusCode::kInvalidArgument,
                              "key longer than " + std::to_string(kMaxKeyBytes) + " bytes"));
  }
  if (impl_->options.prefetch > 0 && count == 1) {
    asio::post(impl_->strand,
               [impl = impl_, key = std::move(key), done = std::move(done)]() mutable {
                 impl->NextFromCache(std::move(key), std::move(done));
               });
    return;
  }
  NextIdsOnBehalf(std::move(key), count, std::string(), std::move(done));
}

void AsyncClient::NextIdsOnBehalf(std::string key, uint32_t count, std::string on_behalf_of,
                                  std::function<void(ClientResult<IdBatch>)> done) {
  if (key.size() > kMaxKeyBytes || on_behalf_of.size() > proto::kMaxOnBehalfOf) {
    return impl_->Deliver(std::move(done), ClientResult<IdBatch>(StatusCode::kInvalidArgument,
                                                                 "key or on_behalf_of too long"));
  }
  auto call = std::make_shared<Call>(impl_->strand);
  call->op = Op::kNextIds;
  call->route_key = key;
  call->key = std::move(key);
  call->count = count;
  call->on_behalf_of = std::move(on_behalf_of);
  call->on_ids = std::move(done);
  asio::post(impl_->strand,
             [impl = impl_, call = std::move(call)]() mutable { impl->Submit(std::move(call)); });
}

void AsyncClient::Ping(std::function<void(ClientResult<microseconds>)> done) {
  auto call = std::make_shared<Call>(impl_->strand);
  call->op = Op::kPing;
  call->on_ping = std::move(done);
  asio::post(impl_->strand,
             [impl = impl_, call = std::move(call)]() mutable { impl->Submit(std::move(call)); });
}

void AsyncClient::Impl::SubscribeRaw(std::vector<std::string> conv_ids, MessageFn on_message,
                                     LostFn on_lost, Done<bool> done) {
  bool fit = true;
  proto::SubscribeReq req{Views(conv_ids, fit)};
  auto call = std::make_shared<Call>(strand);
  call->sub_handlers =
      std::make_shared<SubHandlers>(SubHandlers{std::move(on_message), std::move(on_lost)});
  call->sub_convs = conv_ids;
  SubmitMessage(
      req, Decoding<proto::EmptyRes>(std::move(done), [](const proto::EmptyRes&) { return true; }),
      fit, std::move(call));
}

void AsyncClient::Impl::UnsubscribeRaw(std::vector<std::string> conv_ids, Done<bool> done) {
  bool fit = true;
  auto views = Views(conv_ids, fit);
  if (!fit) {
    return Deliver(std::move(done), ClientResult<bool>(StatusCode::kInvalidArgument,
                                                       "an id is longer than 65535 bytes"));
  }
  // Forget them locally first (no callback for them from now on), then tell
  // the server, on the connection most of them live on.
  asio::post(strand, [self = shared_from_this(), conv_ids = std::move(conv_ids),
                      done = std::move(done)]() mutable {
    int endpoint = -1;
    for (const std::string& c : conv_ids) {
      auto it = self->subs.find(c);
      if (it == self->subs.end()) continue;
      if (endpoint < 0 && it->second.conn) endpoint = it->second.conn->endpoint;
      self->subs.erase(it);
    }
    auto call = std::make_shared<Call>(self->strand);
    call->preferred_endpoint = endpoint;
    bool fit = true;
    self->SubmitMessage(
        proto::UnsubscribeReq{Views(conv_ids, fit)},
        Decoding<proto::EmptyRes>(std::move(done), [](const proto::EmptyRes&) { return true; }),
        fit, std::move(call));
  });
}

SubscriptionKeeper& AsyncClient::Impl::Keeper() {
  if (keeper) return *keeper;
  // The ops hold the Impl weakly: the keeper lives inside it.
  std::weak_ptr<Impl> weak = weak_from_this();
  SubscriptionKeeper::Ops ops;
  ops.subscribe = [weak](std::vector<std::string> convs, MessageFn on_message, LostFn on_lost,
                         Done<bool> done) {
    if (auto self = weak.lock()) {
      self->SubscribeRaw(std::move(convs), std::move(on_message), std::move(on_lost),
                         std::move(done));
    }
  };
  ops.unsubscribe = [weak](std::vector<std::string> convs, Done<bool> done) {
    if (auto self = weak.lock()) self->UnsubscribeRaw(std::move(convs), std::move(done));
  };
  ops.pull = [weak](std::string conv, PullOptions o, Done<PullPage> done) {
    if (auto self = weak.lock()) self->PullRange(std::move(conv), std::move(o), std::move(done));
  };
  ops.max_seqs = [weak](std::vector<std::string> convs, Done<std::vector<int64_t>> done) {
    if (auto self = weak.lock()) self->MaxSeqs(std::move(convs), std::move(done));
  };
  ops.post = [weak](std::function<void()> fn) {
    if (auto self = weak.lock()) asio::post(self->strand, std::move(fn));
  };
  keeper = std::make_shared<SubscriptionKeeper>(strand, std::move(ops), options.backoff_initial,
                                                options.backoff_max);
  return *keeper;
}

void AsyncClient::Subscribe(std::vector<std::string> conv_ids, MessageFn on_message, LostFn on_lost,
                            Done<bool> done) {
  if (!impl_->options.resubscribe) {
    return impl_->SubscribeRaw(std::move(conv_ids), std::move(on_message), std::move(on_lost),
                               std::move(done));
  }
  bool fit = true;
  Views(conv_ids, fit);
  if (!fit) {
    return impl_->Deliver(std::move(done), ClientResult<bool>(StatusCode::kInvalidArgument,
                                                              "an id is longer than 65535 bytes"));
  }
  if (conv_ids.empty()) return impl_->Deliver(std::move(done), ClientResult<bool>(true));
  asio::post(impl_->strand,
             [impl = impl_, conv_ids = std::move(conv_ids), on_message = std::move(on_message),
              on_lost = std::move(on_lost), done = std::move(done)]() mutable {
               if (impl->closed) {
                 return done(ClientResult<bool>(StatusCode::kCancelled, "client closed"));
               }
               impl->Keeper().Subscribe(std::move(conv_ids), std::move(on_message),
                                        std::move(on_lost), std::move(done));
             });
}

void AsyncClient::Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done) {
  if (!impl_->options.resubscribe) {
    return impl_->UnsubscribeRaw(std::move(conv_ids), std::move(done));
  }
  asio::post(impl_->strand,
             [impl = impl_, conv_ids = std::move(conv_ids), done = std::move(done)]() mutable {
               impl->Keeper().Unsubscribe(std::move(conv_ids), std::move(done));
             });
}

void AsyncClient::ClusterNudge(Done<bool> done) {
  auto call = std::make_shared<Call>(impl_->strand);
  call->op = Op::kRaw;
  call->opcode = proto::kOpClusterNudge;
  call->on_raw = [done = std::move(done)](ClientResult<std::string> r) {
    if (!r) return done(ClientResult<bool>(r.code(), r.message()));
    done(ClientResult<bool>(true));
  };
  asio::post(impl_->strand,
             [impl = impl_, call = std::move(call)]() mutable { impl->Submit(std::move(call)); });
}

void AsyncClient::Close() {
  asio::post(impl_->strand, [impl = impl_] { impl->DoClose(); });
}

uint32_t ShardOf(std::string_view key, uint32_t shards) { return proto::ShardOfKey(key, shards); }

bool SplitEndpoint(const std::string& s, std::string& host, std::string& port) {
  size_t colon;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') return false;
    host = s.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = s.rfind(':');
    if (colon == std::string::npos) return false;
    host = s.substr(0, colon);
    if (host.find(':') != std::string::npos) return false;  // bare IPv6: needs brackets
  }
  port = s.substr(colon + 1);
  if (host.empty() || port.empty() || port.size() > 5) return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const int p = std::stoi(port);
  return p >= 1 && p <= 65535;
}

}  // namespace seqd::client
