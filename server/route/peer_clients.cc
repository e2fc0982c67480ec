#include "server/route/peer_clients.h"

#include <seqd/client.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <utility>

#include "server/base/log.h"
#include "server/base/log_throttle.h"

namespace seqd {
namespace {

// The peer's answer as our own error. kWrongOwner means "try again where
// the map now points": also for codes the client makes itself (timeout,
// connection lost: not answered) and for a peer that is shutting down.
Error FromClient(client::StatusCode code, std::string message, const std::string& address) {
  // The client library names the endpoint ("host:port: ..."): our clients
  // must not learn the peers' addresses.
  if (message.starts_with(address + ": ")) message.erase(0, address.size() + 2);
  using C = client::StatusCode;
  // The owner's answers passed back as they are (none is retried here).
  static constexpr std::pair<C, ErrorCode> kPassedBack[] = {
      {C::kInvalidArgument, ErrorCode::kInvalidArgument},
      {C::kUnknownKey, ErrorCode::kUnknownKey},
      {C::kTooLarge, ErrorCode::kTooLarge},
      {C::kNotFound, ErrorCode::kNotFound},
      {C::kFailedPrecondition, ErrorCode::kFailedPrecondition},
      {C::kStoreUnavailable, ErrorCode::kStoreUnavailable},
      {C::kWrongOwner, ErrorCode::kWrongOwner},
      {C::kResourceExhausted, ErrorCode::kResourceExhausted},
      {C::kMessageIdConflict, ErrorCode::kMessageIdConflict},
  };
  for (const auto& [answered, ours] : kPassedBack) {
    if (code == answered) return MakeError(ours, message);
  }
  switch (code) {
    case C::kInternal:
      return MakeError(ErrorCode::kInternal, "the key's owner reported an internal error");
    case C::kUnauthenticated:
    case C::kPermissionDenied:
      // Our cluster token is missing from the peer's tokens file (or lacks
      // the cluster scope): an operator's mistake, not the client's.
      SEQD_LOG(kWarn) << "cluster: peer " << address
                      << " refused this instance's cluster token: " << message;
      return MakeError(ErrorCode::kStoreUnavailable, "the key's owner refused this instance");
    case C::kShuttingDown:  // the owner is leaving: its shards move
      return MakeError(ErrorCode::kWrongOwner, "the owner is shutting down");
    default:  // not answered (timeout, connection lost), or not understood
      if (message.find("TLS") != std::string::npos) {
        // Certificates or CAs that do not fit: an operator's mistake too.
        // Said at most every 10 s: every forward to that peer fails alike.
        static LogThrottle throttle(std::chrono::seconds(10));
        if (throttle.Take()) {
          SEQD_LOG(kWarn) << "cluster: cannot reach peer " << address << ": " << message;
        }
      }
      return MakeError(ErrorCode::kWrongOwner, "the key's owner did not answer");
  }
}

}  // namespace

PeerClients::PeerClients(boost::asio::any_io_executor executor,
                         std::chrono::milliseconds call_timeout, PeerCredentials credentials)
    : executor_(std::move(executor)),
      call_timeout_(call_timeout),
      credentials_(std::move(credentials)) {}

PeerClients::~PeerClients() { Close(); }

Status PeerClients::CheckCredentials() const {
  client::ClientOptions o;
  o.endpoints = {"127.0.0.1:1"};  // never dialled: the client connects on first use
  o.tls = credentials_.tls;
  o.tls_ca_file = credentials_.tls_ca_file;
  o.tls_cert_file = credentials_.tls_cert_file;
  o.tls_key_file = credentials_.tls_key_file;
  try {
    client::AsyncClient probe(executor_, std::move(o));
  } catch (const std::invalid_argument& e) {
    return MakeError(ErrorCode::kInvalidArgument, std::string("cluster peers: ") + e.what());
  }
  return OkStatus();
}

client::AsyncClient* PeerClients::For(const std::string& address) {
  MutexLock lock(mu_);
  if (closed_) return nullptr;
  auto it = peers_.find(address);
  if (it != peers_.end()) return it->second.get();
  client::ClientOptions o;
  o.endpoints = {address};
  o.connect_timeout = call_timeout_;
  o.call_timeout = call_timeout_;
  o.max_attempts = 1;  // the router decides what to retry, within its deadline
  o.no_forward = true;
  // A relay's subscription at one owner loses nothing the keeper does not
  // see (PUSH_DROPPED, a lost connection); a move starts a new one, which a
  // periodic MAX_SEQS could not mend. Subscribers check on their side.
  o.resync_every = std::chrono::milliseconds(0);
  o.token = credentials_.token;
  o.tls = credentials_.tls;
  o.tls_ca_file = credentials_.tls_ca_file;
  o.tls_cert_file = credentials_.tls_cert_file;
  o.tls_key_file = credentials_.tls_key_file;
  o.placement_version = placement_.version;
  o.on_placement_version = placement_.heard;
  try {
    auto peer = std::make_unique<client::AsyncClient>(executor_, std::move(o));
    return peers_.emplace(address, std::move(peer)).first->second.get();
  } catch (const std::invalid_argument&) {
    return nullptr;  // a malformed advertised address
  }
}

void PeerClients::NextIds(const std::string& address, std::string_view key, int64_t count,
                          std::string_view requester, TakeCallback done) {
  client::AsyncClient* peer = For(address);
  if (!peer) {
    return done(MakeError(ErrorCode::kWrongOwner, "the key's owner cannot be reached"));
  }
  peer->NextIdsOnBehalf(std::string(key), static_cast<uint32_t>(count), std::string(requester),
                        [done = std::move(done), address](client::ClientResult<client::IdBatch> r) {
                          if (!r) return done(FromClient(r.code(), r.message(), address));
                          IdBatch batch;
                          for (const client::IdRange& range : r->ranges) {
                            batch.ranges.push_back(IdRange{range.first, range.last});
                          }
                          done(std::move(batch));
                        });
}

void PeerClients::NextBlock(const std::string& address, std::string_view key, int64_t count,
                            std::string_view requester, std::string_view token, TakeCallback done) {
  client::AsyncClient* peer = For(address);
  if (!peer) {
    return done(MakeError(ErrorCode::kWrongOwner, "the key's owner cannot be reached"));
  }
  auto answer = [done = std::move(done), address](client::ClientResult<client::IdRange> r) {
    if (!r) return done(FromClient(r.code(), r.message(), address));
    IdBatch batch;
    batch.ranges.push_back(IdRange{r->first, r->last});
    done(std::move(batch));
  };
  if (token.empty()) {
    return peer->NextBlockOnBehalf(std::string(key), static_cast<uint32_t>(count),
                                   std::string(requester), std::move(answer));
  }
  peer->NextBlockOnceOnBehalf(std::string(key), static_cast<uint32_t>(count), std::string(token),
                              std::string(requester), std::move(answer));
}

void PeerClients::MaxIds(const std::string& address, std::vector<std::string> keys,
                         ValuesCallback done) {
  client::AsyncClient* peer = For(address);
  if (!peer) {
    return done(MakeError(ErrorCode::kWrongOwner, "the key's owner cannot be reached"));
  }
  peer->MaxIds(std::move(keys),
               [done = std::move(done), address](client::ClientResult<std::vector<int64_t>> r) {
                 if (!r) return done(FromClient(r.code(), r.message(), address));
                 done(std::move(*r));
               });
}

void PeerClients::SetMinSeqs(const std::string& address, const std::vector<MinSeqValue>& values,
                             std::function<void(Status)> done) {
  client::AsyncClient* peer = For(address);
  if (!peer) {
    return done(MakeError(ErrorCode::kWrongOwner, "the key's owner cannot be reached"));
  }
  std::vector<std::pair<std::string, int64_t>> items;
  items.reserve(values.size());
  for (const MinSeqValue& v : values) items.emplace_back(v.key, v.min_seq);
  peer->SetMinSeqs(std::move(items),
                   [done = std::move(done), address](client::ClientResult<bool> r) {
                     if (!r) return done(FromClient(r.code(), r.message(), address));
                     done(OkStatus());
                   });
}

void PeerClients::Send(const std::string& address, const SendRequest& request,
                       std::function<void(Result<AppendOutcome>)> done) {
  client::AsyncClient* peer = For(address);
  if (!peer) return done(MakeError(ErrorCode::kWrongOwner, "the key's owner cannot be reached"));
  client::OutgoingMessage m;
  m.conv_id = request.conv_id;
  m.sender_id = request.sender_id;
  m.client_msg_id = request.client_msg_id;
  m.content_type = request.content_type;
  m.payload = request.payload;
  peer->Send(std::move(m),
             [done = std::move(done), address](client::ClientResult<client::SendResult> r) {
               if (!r) return done(FromClient(r.code(), r.message(), address));
               done(AppendOutcome{r->seq, r->server_msg_id, r->send_time_ms, r->duplicate});
             });
}

void PeerClients::Subscribe(const std::string& address, const std::string& conv,
                            std::function<void(const StoredMessage&)> on_message,
                            std::function<void()> on_lost) {
  client::AsyncClient* peer = For(address);
  if (!peer) return boost::asio::post(executor_, std::move(on_lost));  // never inline
  auto lost = std::make_shared<std::function<void()>>(std::move(on_lost));
  peer->Subscribe(
      {conv},
      [on_message = std::move(on_message)](client::Message m) {
        on_message(StoredMessage{.conv_id = std::move(m.conv_id),
                                 .seq = m.seq,
                                 .server_msg_id = m.server_msg_id,
                                 .sender_id = std::move(m.sender_id),
                                 .client_msg_id = std::move(m.client_msg_id),
                                 .content_type = m.content_type,
                                 .payload = std::move(m.payload),
                                 .send_time_ms = m.send_time_ms,
                                 .status = static_cast<MessageStatus>(m.status)});
      },
      [lost](std::vector<std::string>, std::string) {
        if (*lost) std::exchange(*lost, nullptr)();
      },
      [lost](client::ClientResult<bool> r) {
        if (!r && *lost) std::exchange(*lost, nullptr)();
      });
}

void PeerClients::Unsubscribe(const std::string& address, const std::string& conv) {
  if (client::AsyncClient* peer = For(address)) {
    peer->Unsubscribe({conv}, [](client::ClientResult<bool>) {});
  }
}

void PeerClients::Nudge(const std::string& address, std::function<void()> answered) {
  client::AsyncClient* peer = For(address);
  if (!peer) return boost::asio::post(executor_, std::move(answered));
  peer->ClusterNudge([answered = std::move(answered)](client::ClientResult<bool>) { answered(); });
}

void PeerClients::Close() {
  std::map<std::string, std::unique_ptr<client::AsyncClient>> peers;
  {
    MutexLock lock(mu_);
    closed_ = true;
    peers.swap(peers_);
  }
  for (auto& [address, peer] : peers) peer->Close();
}

}  // namespace seqd
