// AsyncClient's entry points: construction, NextIds (with prefetch), Ping,
// ClusterNudge and Close, and the free functions of seqd/client.h; the
// jobs behind them are listed in async_client_impl.h.
#include <algorithm>

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
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kMessageIdConflict:
      return "MESSAGE_ID_CONFLICT";
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

int64_t AsyncClient::PlacementVersion() const {
  return impl_->placement_version.load(std::memory_order_acquire);
}

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

void AsyncClient::Impl::DoClose() {
  if (closed) return;
  closed = true;
  std::vector<std::shared_ptr<Connection>> all(conns.begin(), conns.end());
  for (const auto& conn : all) {
    ConnFail(conn, StatusCode::kCancelled, "client closed", false);
  }
  for (Endpoint& ep : endpoints) ep.conn.reset();
  subs.clear();
  if (keeper) keeper->Close();
  std::vector<std::shared_ptr<Call>> rest;
  for (auto& [seq, call] : calls) rest.push_back(call);
  for (const auto& call : rest) Fail(call, StatusCode::kCancelled, "client closed");
  for (auto& [key, kc] : cache) {
    for (auto& done : kc.waiters) {
      Deliver(std::move(done), ClientResult<IdBatch>(StatusCode::kCancelled, "client closed"));
    }
  }
  cache.clear();
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
