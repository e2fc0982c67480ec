// Cluster mode's connections to other instances (docs/cluster.md): one
// pipelined binary-protocol client per peer address, made on first use and
// kept, each request marked NO_FORWARD (a hop limit of 1: the peer answers
// WRONG_OWNER rather than forwarding again).
//
// Thread safety: every method is safe from any thread; callbacks run on the
// io_context given at construction and must not block.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "server/core/segment_allocator.h"
#include "server/msg/message_service.h"

namespace seqd {

namespace client {
class AsyncClient;
}

// What this instance presents to its peers, and how it checks them.
struct PeerCredentials {
  // The secret of a token with the cluster scope (their tokens files list
  // its SHA-256); "" for none (tokens off).
  std::string token;
  // TLS on the binary listeners: verify peers against `tls_ca_file` (""
  // for the system's CAs) and, for mutual TLS, present this instance's own
  // certificate and key ("" for none).
  bool tls = false;
  std::string tls_ca_file, tls_cert_file, tls_key_file;
};

// Store groups (docs/cluster.md, "Store groups"): the placement version
// this instance tells its peers, and where the versions they tell go.
struct PeerPlacement {
  // This instance's version, read before each request to a peer (never
  // blocks): a connection is told it (op PLACEMENT) when it rose.
  std::function<int64_t()> version;
  // A version a peer told (a push before its answers, or the answer to
  // PLACEMENT) above every one told before, on a network thread; must not
  // block.
  std::function<void(int64_t version)> heard;
};

class PeerClients {
 public:
  PeerClients(boost::asio::any_io_executor executor, std::chrono::milliseconds call_timeout,
              PeerCredentials credentials = {});
  ~PeerClients();
  // An error if the credentials' TLS files do not load (checked at start,
  // so a bad file is not found at the first forward).
  Status CheckCredentials() const;
  PeerClients(const PeerClients&) = delete;
  PeerClients& operator=(const PeerClients&) = delete;

  // NEXT_IDS of `key` at the instance listening on `address` (host:port).
  // Errors: the peer's own answer (as an ErrorCode), kWrongOwner, or
  // kStoreUnavailable when it could not be reached in time (retryable: the
  // IDs of a lost answer are never handed out). `requester`: the token id
  // the request came with ("" for none); the owner charges its limits.
  void NextIds(const std::string& address, std::string_view key, int64_t count,
               std::string_view requester, TakeCallback done);

  // NEXT_BLOCK (NEXT_BLOCK_ONCE with a non-empty `token`), MAX_IDS and
  // SET_MIN_SEQS at the instance on `address`; errors as NextIds. Setting
  // the same min seqs again is harmless.
  void NextBlock(const std::string& address, std::string_view key, int64_t count,
                 std::string_view requester, std::string_view token, TakeCallback done);
  void MaxIds(const std::string& address, std::vector<std::string> keys, ValuesCallback done);
  void SetMinSeqs(const std::string& address, const std::vector<MinSeqValue>& values,
                  std::function<void(Status)> done);

  // SEND of `request` at the instance on `address`; errors as NextIds.
  // Re-sending after kWrongOwner is safe: the store detects the re-send.
  void Send(const std::string& address, const SendRequest& request,
            std::function<void(Result<AppendOutcome>)> done);

  // SUBSCRIBE to `conv` at the instance on `address`: `on_message` gets
  // each message it publishes; `on_lost` runs once if the subscription
  // could not be made or ends (connection closed, PUSH_DROPPED). Neither
  // runs inside this call.
  void Subscribe(const std::string& address, const std::string& conv,
                 std::function<void(const StoredMessage&)> on_message,
                 std::function<void()> on_lost);
  void Unsubscribe(const std::string& address, const std::string& conv);
  // CLUSTER_NUDGE to the instance on `address`; `answered` runs once it
  // was answered or failed (never inside this call).
  void Nudge(const std::string& address, std::function<void()> answered);

  // Store groups: set before the first call.
  void SetPlacement(PeerPlacement placement) { placement_ = std::move(placement); }

  // Closes every connection; later calls fail with kWrongOwner.
  void Close() EXCLUDES(mu_);

 private:
  client::AsyncClient* For(const std::string& address) EXCLUDES(mu_);

  const boost::asio::any_io_executor executor_;
  const std::chrono::milliseconds call_timeout_;
  const PeerCredentials credentials_;
  PeerPlacement placement_;  // set before the first call
  Mutex mu_;
  bool closed_ GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<client::AsyncClient>> peers_ GUARDED_BY(mu_);
};

}  // namespace seqd
