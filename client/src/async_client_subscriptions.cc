// AsyncClient's subscriptions: the raw SUBSCRIBE and UNSUBSCRIBE, pushed
// messages to their subscriber (and the other pushes to where they go),
// subscriptions lost with their connection,
// and the glue to SubscriptionKeeper (ClientOptions::resubscribe), which
// keeps the application's subscriptions over the raw ones. On the strand
// unless said otherwise (async_client_impl.h).
#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "async_client_impl.h"

namespace seqd::client {

void AsyncClient::Impl::HandlePush(const std::shared_ptr<Connection>& conn,
                                   const proto::FrameView& f,
                                   const std::optional<proto::ResponseView>& resp) {
  const std::string& name = endpoints[conn->endpoint].name;
  if (!resp || f.request_id != 0) {
    return ConnFail(conn, StatusCode::kProtocol, "bad push frame from " + name, true);
  }
  if (f.opcode == static_cast<uint8_t>(proto::kOpPushDropped)) {
    return LoseSubscriptions(conn,
                             name + " dropped the subscriptions: " + std::string(resp->message));
  }
  if (f.opcode == static_cast<uint8_t>(proto::kOpPlacement)) {
    // A hint, not data: one that does not parse is ignored like an unknown push.
    std::optional<int64_t> version;
    if (resp->status == proto::Status::kOk) version = proto::ParsePlacementVersion(resp->result);
    if (version) NotePlacement(*version);
    return;
  }
  if (f.opcode != static_cast<uint8_t>(proto::kOpPushMessage) ||
      resp->status != proto::Status::kOk) {
    return;  // a push kind this client does not know: ignored
  }
  std::optional<proto::PushMessage> push = proto::DecodeBody<proto::PushMessage>(resp->result);
  if (!push) return ConnFail(conn, StatusCode::kProtocol, "bad push from " + name, true);
  auto it = subs.find(std::string(push->conv_id));
  if (it == subs.end() || it->second.conn != conn) return;  // unsubscribed, or an old one
  Message m = ToMessage(push->conv_id, push->message);
  asio::post(strand, [handlers = it->second.handlers, m = std::move(m)]() mutable {
    if (handlers->on_message) handlers->on_message(std::move(m));
  });
}

void AsyncClient::Impl::LoseSubscriptions(const std::shared_ptr<Connection>& conn,
                                          const std::string& reason) {
  std::map<std::shared_ptr<SubHandlers>, std::vector<std::string>> lost;
  for (auto it = subs.begin(); it != subs.end();) {
    if (it->second.conn == conn) {
      lost[it->second.handlers].push_back(it->first);
      it = subs.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [handlers, convs] : lost) {
    std::sort(convs.begin(), convs.end());
    asio::post(strand, [handlers = handlers, convs = std::move(convs), reason]() mutable {
      if (handlers->on_lost) handlers->on_lost(std::move(convs), reason);
    });
  }
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
                                                options.backoff_max, options.resync_every);
  return *keeper;
}

// --- the public calls (any thread) ---------------------------------------------------

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
  asio::post(impl_->strand, [impl = impl_, conv_ids = std::move(conv_ids),
                             done = std::move(done)]() mutable {
    if (impl->closed) return done(ClientResult<bool>(true));
    impl->Keeper().Unsubscribe(std::move(conv_ids), std::move(done));
  });
}

// --- Subscription handles ------------------------------------------------------------

// Holds its client weakly: once the client is destroyed, calls complete at
// once (in the calling thread) with kCancelled.
struct Subscription::Impl {
  std::weak_ptr<AsyncClient::Impl> client;
  uint64_t id = 0;
};

std::unique_ptr<Subscription> AsyncClient::NewSubscription(MessageFn on_message, LostFn on_lost) {
  auto sub = std::make_shared<Subscription::Impl>();
  sub->client = impl_;
  sub->id = impl_->next_subscription.fetch_add(1);
  asio::post(impl_->strand, [impl = impl_, id = sub->id, on_message = std::move(on_message),
                             on_lost = std::move(on_lost)]() mutable {
    if (!impl->closed)
      impl->Keeper().NewSubscription(id, std::move(on_message), std::move(on_lost));
  });
  return std::unique_ptr<Subscription>(new Subscription(std::move(sub)));
}

Subscription::Subscription(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Subscription::~Subscription() { Close(); }

namespace {

// Add's arguments as the keeper takes them: an error for an empty id, an
// id listed twice or too long for the wire, or a negative from.
std::optional<ClientResult<bool>> CheckAdd(const std::vector<std::string>& conv_ids,
                                           const std::map<std::string, int64_t>& from) {
  std::set<std::string_view> seen;
  for (const std::string& conv : conv_ids) {
    if (conv.empty() || conv.size() > 0xFFFF || !seen.insert(conv).second) {
      return ClientResult<bool>(StatusCode::kInvalidArgument,
                                "conversation '" + conv.substr(0, 64) +
                                    "' empty, longer than 65535 bytes or listed twice");
    }
    if (auto f = from.find(conv); f != from.end() && f->second < 0) {
      return ClientResult<bool>(StatusCode::kInvalidArgument,
                                "from of '" + conv.substr(0, 64) + "' is negative");
    }
  }
  return std::nullopt;
}

ClientResult<bool> ClientGone() {
  return ClientResult<bool>(StatusCode::kCancelled, "client destroyed");
}

}  // namespace

void Subscription::Add(std::vector<std::string> conv_ids, std::map<std::string, int64_t> from,
                       AsyncClient::Done<bool> done) {
  std::shared_ptr<AsyncClient::Impl> client = impl_->client.lock();
  if (!client) return done(ClientGone());
  if (std::optional<ClientResult<bool>> bad = CheckAdd(conv_ids, from)) {
    return client->Deliver(std::move(done), std::move(*bad));
  }
  asio::post(client->strand, [client, id = impl_->id, conv_ids = std::move(conv_ids),
                              from = std::move(from), done = std::move(done)]() mutable {
    if (client->closed) return done(ClientResult<bool>(StatusCode::kCancelled, "client closed"));
    client->Keeper().Add(id, std::move(conv_ids), std::move(from), std::move(done));
  });
}

void Subscription::Remove(std::vector<std::string> conv_ids, AsyncClient::Done<bool> done) {
  std::shared_ptr<AsyncClient::Impl> client = impl_->client.lock();
  if (!client) return done(ClientGone());
  asio::post(client->strand, [client, id = impl_->id, conv_ids = std::move(conv_ids),
                              done = std::move(done)]() mutable {
    if (client->closed) return done(ClientResult<bool>(true));
    client->Keeper().Remove(id, std::move(conv_ids), std::move(done));
  });
}

ClientResult<bool> Subscription::Add(std::vector<std::string> conv_ids,
                                     std::map<std::string, int64_t> from) {
  auto promise = std::make_shared<std::promise<ClientResult<bool>>>();
  std::future<ClientResult<bool>> future = promise->get_future();
  Add(std::move(conv_ids), std::move(from),
      [promise](ClientResult<bool> r) { promise->set_value(std::move(r)); });
  return future.get();
}

ClientResult<bool> Subscription::Remove(std::vector<std::string> conv_ids) {
  auto promise = std::make_shared<std::promise<ClientResult<bool>>>();
  std::future<ClientResult<bool>> future = promise->get_future();
  Remove(std::move(conv_ids),
         [promise](ClientResult<bool> r) { promise->set_value(std::move(r)); });
  return future.get();
}

void Subscription::Close() {
  std::shared_ptr<AsyncClient::Impl> client = impl_->client.lock();
  if (!client) return;
  asio::post(client->strand, [client, id = impl_->id] {
    if (!client->closed && client->keeper) client->keeper->CloseSubscription(id);
  });
}

}  // namespace seqd::client
