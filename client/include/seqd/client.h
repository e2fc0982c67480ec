// seqd client library: IDs and the message store over the seqd binary
// protocol (docs/protocol.md).
//
// Snowflake IDs (NextSnowflake, DecodeSnowflake): 64-bit, time-ordered IDs
// unique across servers (docs/snowflake.md). They follow the same rules,
// and NOT_SERVING (the server holds no worker-id lease now, or its clock
// moved back) is retried on the next endpoint too. Retrying is safe: the IDs
// of a lost answer are never issued again. The IDs of one answer ascend, and
// so do those of one server; after a failover, the next server's IDs may be
// smaller than the last ones seen.
//
// Two APIs over one implementation:
//   - AsyncClient runs on an executor you provide (e.g. your io_context) and
//     reports results through callbacks.
//   - Client is blocking; it runs its own io_context thread and may be called
//     from many threads at once.
//
// Both pipeline many requests on one TCP connection per endpoint (responses
// are matched by request id), time out each attempt after call_timeout and
// a whole call after call_deadline (10 s by default), and retry calls that failed on connection
// loss, timeout, STORE_UNAVAILABLE or SHUTTING_DOWN (and snowflake calls on NOT_SERVING) on the
// next endpoint, with exponential backoff and jitter, while the call_deadline leaves time (and
// up to max_attempts, if set): an outage shorter than the deadline is ridden through. Retrying
// NEXT_IDS is safe: at worst the IDs of a lost answer are skipped, never handed out twice. Errors
// the server answers about the request itself (INVALID_ARGUMENT, UNKNOWN_KEY, ...) are not
// retried.
//
// Endpoint choice: each client starts at a round-robin position among
// `endpoints` (so clients in one process spread over the servers) and sticks
// to one endpoint while it works, so one client's IDs of a key come from one
// server and increase. A connection failure marks its endpoint down for a
// backoff (doubling per consecutive failure, up to backoff_max; failures
// count until the endpoint answers again) and calls move on to the next
// endpoint in order. A connection on which nothing came back within
// call_timeout (a hung or SIGSTOPped server, whose kernel still accepts
// connections) is closed and its endpoint marked down for at least
// call_timeout. If every endpoint is down, the one
// whose backoff ends first is tried anyway.
//
// Local prefetch (ClientOptions::prefetch > 0, as Tinyid's client does): a
// NextIds(key, 1) / NextId(key) is served from a batch of `prefetch` IDs held
// in the client, fetched with one request and refilled in the background
// once half of it is used. This saves round trips but trades strict ordering
// across clients: two clients hold interleaved batches, so an ID handed out
// later by one client may be smaller than an ID handed out earlier by
// another. IDs stay unique; IDs still held when the client is closed are
// never used. Calls with count > 1 always go to the server.
//
// Message store calls (Send, PullRange, ..., SetConvMinSeq) follow the same
// rules: pipelined, timed out per attempt, retried on the next endpoint on
// connection loss, timeout, STORE_UNAVAILABLE or SHUTTING_DOWN. Retrying a
// Send is safe: the server detects the re-send by (conv, sender,
// client_msg_id) and answers the first message's seq with duplicate = true.
// The same client_msg_id with another content_type or payload is another
// message, not a re-send: it fails MESSAGE_ID_CONFLICT and is not stored.
// STORE_UNAVAILABLE on a Send means "maybe stored" (e.g. the database
// connection died after COMMIT): Send resends the same message by itself, so
// a send that did commit comes back with its original seq. If Send still
// fails after max_attempts, resend the same OutgoingMessage (same
// client_msg_id) later; never give it a new client_msg_id.
//
// Push: Subscribe(conv_ids, on_message, on_lost, done). With
// ClientOptions::resubscribe (the default) a subscription outlives its
// connection:
//   - on_message receives, per conversation, every message whose seq is
//     above the conversation's max seq at the time of the Subscribe call,
//     in seq order, each exactly once: no hole and no duplicate, across lost
//     connections, server restarts and PUSH_DROPPED (a slow reader);
//   - when pushes stop (connection closed, PUSH_DROPPED), on_lost(conv_ids,
//     reason) tells you; the client re-subscribes by itself (on any
//     endpoint, with jittered backoff, for as long as it takes) and pulls
//     what was sent meanwhile, from the last seq it delivered;
//   - on_lost runs again, with a reason starting "gave up", only if the
//     server refuses the re-subscription (e.g. PERMISSION_DENIED): nothing
//     more comes for those conversations;
//   - seqs the server no longer has (below a conversation's min seq, after
//     SetConvMinSeq) are skipped once three pulls of them, a second apart,
//     come back without them.
// `done` reports the first SUBSCRIBE's answer (true), or the error of it or
// of the MAX_SEQS that fixes the starting point. Subscribing a conversation
// again replaces its callbacks and keeps its position.
// With resubscribe = false, Subscribe is the raw protocol op: on_message
// gets pushes as they come (duplicates and gaps are possible across
// re-subscriptions: feed them to a seqd::client::ReceiveQueue), on_lost runs
// once when they stop, and nothing is re-subscribed.
// Either way, once Unsubscribe's `done` has run, no callback of those
// conversations runs again; after Close() none runs but those already
// queued on the strand (with resubscribe, not even those). Callbacks capture
// what they use: keep it alive until the client is destroyed.
//
// Subscriptions to a changing set of conversations: NewSubscription(
// on_message, on_lost) returns a Subscription whose Add(conv_ids, from)
// and Remove(conv_ids) change its conversations as it runs, with the
// contract above per conversation (whatever ClientOptions::resubscribe
// says): each starts after from[conv] (the last seq the caller has; what
// exists above it is pulled first), or after its max seq when Add was
// called, and Remove ends it at a cut, its max seq when Remove was called
// (every message up to the cut still arrives, none after it). Every
// subscription of a client, and its calls, share the
// client's one connection per endpoint; two subscriptions holding the
// same conversation each get every message of it. Do not mix them with
// raw subscriptions (resubscribe = false) of the same conversations.
//
// Thread safety: all public member functions of AsyncClient and Client may be
// called from any thread concurrently. AsyncClient callbacks run on an
// internal strand of the executor, never inside the calling function; do not
// block in them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "seqd/message.h"

namespace seqd::client {

class Subscription;

// Status codes: 0-66 mirror the binary protocol's codes; 100 and above are
// produced by the client itself.
enum class StatusCode : uint16_t {
  kOk = 0,
  kInvalidArgument = 1,
  kUnknownKey = 2,
  kKeyExists = 3,
  kStoreUnavailable = 4,
  kShuttingDown = 5,
  kInternal = 6,
  kUnknownOpcode = 7,
  kNotFound = 8,
  kFailedPrecondition = 9,
  kTooLarge = 10,
  kNotServing = 11,  // no snowflake IDs now: no worker-id lease, or the clock moved back
  kWrongOwner = 12,  // cluster mode, with ClientOptions::no_forward: another instance owns the key
  kUnauthenticated = 13,    // the server wants a token (ClientOptions::token), or it was refused
  kPermissionDenied = 14,   // the token's scopes do not allow this op for this key
  kResourceExhausted = 15,  // a rate limit (new auto-created keys per token); retry later
  // Send: the client_msg_id is stored with another content_type or payload
  // (a different message, not a re-send); nothing was stored. Not retried.
  kMessageIdConflict = 16,
  kMalformedFrame = 64,
  kUnsupportedVersion = 65,
  kFrameTooLarge = 66,
  kTimeout = 100,      // no answer within call_timeout (last attempt) or call_deadline
  kUnavailable = 101,  // no endpoint reachable / connection lost
  kProtocol = 102,     // the server sent something that is not the protocol
  kCancelled = 103,    // the client was closed before the call completed
};

// "OK", "INVALID_ARGUMENT", ..., "TIMEOUT", "UNAVAILABLE", "PROTOCOL", "CANCELLED".
std::string_view StatusCodeName(StatusCode code);

template <typename T>
class ClientResult {
 public:
  ClientResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit OK
  ClientResult(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  // Empty when ok().
  const std::string& message() const { return message_; }
  // "UNKNOWN_KEY: unknown key 'x'"; "OK" when ok().
  std::string ToString() const {
    std::string s(StatusCodeName(code_));
    if (!message_.empty()) s += ": " + message_;
    return s;
  }

  // REQUIRES: ok() (throws std::logic_error otherwise).
  T& value() {
    Check();
    return *value_;
  }
  const T& value() const {
    Check();
    return *value_;
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!value_) throw std::logic_error("ClientResult::value() on error " + ToString());
  }
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::optional<T> value_;
};

// IDs first..last, both included.
struct IdRange {
  int64_t first = 0;
  int64_t last = 0;
  uint64_t size() const { return static_cast<uint64_t>(last - first) + 1; }
  bool operator==(const IdRange&) const = default;
};

// The IDs of one NextIds call: contiguous ranges in increasing order.
struct IdBatch {
  std::vector<IdRange> ranges;
  uint64_t count() const {
    uint64_t n = 0;
    for (const IdRange& r : ranges) n += r.size();
    return n;
  }
  // Every ID, expanded.
  std::vector<int64_t> ids() const {
    std::vector<int64_t> out;
    out.reserve(count());
    for (const IdRange& r : ranges) {
      for (int64_t id = r.first;; ++id) {
        out.push_back(id);
        if (id == r.last) break;
      }
    }
    return out;
  }
};

// A snowflake ID split by the server's layout (DecodeSnowflake).
struct DecodedSnowflake {
  int64_t time_ms = 0;  // unix milliseconds (the layout's epoch added back)
  int64_t worker = 0;
  int64_t sequence = 0;  // within the millisecond
  bool operator==(const DecodedSnowflake&) const = default;
};

struct ClientOptions {
  std::vector<std::string> endpoints;               // "host:port" or "[v6addr]:port"
  std::chrono::milliseconds connect_timeout{1000};  // resolve + connect, per attempt
  std::chrono::milliseconds call_timeout{1000};     // per attempt
  int max_attempts = 0;  // a cap on attempts per call; 0 = none (call_deadline ends the retries)
  std::chrono::milliseconds backoff_initial{20};    // first retry delay (jittered)
  std::chrono::milliseconds backoff_max{1000};      // cap of retry delay and endpoint down time
  size_t prefetch = 0;                              // local prefetch batch size per key, 0 = off
  size_t max_in_flight_per_connection = 1024;       // more calls wait in the client
  // The overall bound on one call, across all its attempts and backoffs: a
  // call is retried (up to max_attempts, if set) while time is left, so an
  // outage shorter than it is ridden through. Each attempt waits at most
  // min(call_timeout, the time left), a backoff that would end past the
  // deadline is cut to half the time left, no attempt starts with under
  // 1 ms left, and a call still unanswered then (at most 1 ms before the
  // deadline) fails with kTimeout ("... within call_deadline N ms"). Set it
  // to what the caller can wait (client/README.md, "Faults and
  // deadlines"). 0 = none: then max_attempts must be set, and a call ends
  // after that many attempts.
  std::chrono::milliseconds call_deadline{10000};
  // Cluster mode (docs/cluster.md): ask servers to answer WRONG_OWNER rather
  // than forward a request for a key they do not own (request flag
  // NO_FORWARD). Servers before cluster mode refuse the flag.
  bool no_forward = false;
  // Cluster mode (docs/cluster.md): fetch the shard map (op CLUSTER_MAP) in
  // the background and send NEXT_IDS and SEND straight to each key's owner,
  // adding owners' advertised addresses to the endpoints as needed. A
  // WRONG_OWNER answer refreshes the map; that attempt is then retried the
  // ordinary way (the server forwards it). Against a server without cluster
  // mode the client stops asking after its UNKNOWN_OPCODE. Implies
  // watch_placement: a rise of the placement version refreshes the map too.
  bool route_by_shard = false;
  // Store groups (docs/cluster.md, "Store groups"): every connection asks
  // for the placement version (op PLACEMENT, after AUTH), which servers
  // with store groups then tell again before their first answer after it
  // rose (see PlacementVersion()). A server before the op answers it
  // UNKNOWN_OPCODE (ignored). Off: no frame is added.
  bool watch_placement = false;
  // With watch_placement: called, on the client's strand (it must not
  // block), with each placement version a server tells above every one
  // told before.
  std::function<void(int64_t version)> on_placement_version;
  // Between seqd instances (store groups; implies watch_placement): this
  // instance's own placement version, read before each request is sent
  // (it must not block); when it is above what the request's connection
  // was told, a PLACEMENT request telling it goes first, so a peer behind
  // it reads the placement. Empty: nothing is told.
  std::function<int64_t()> placement_version;
  // A token's secret (docs/security.md), sent as the first frame (AUTH) of
  // every connection; "" sends none. A server with tokens answers calls
  // without one UNAUTHENTICATED, and PERMISSION_DENIED for keys outside
  // the token's scopes; neither is retried. The tools read it from
  // --token or SEQD_TOKEN; the library reads no environment.
  std::string token;
  // Subscriptions survive connection loss: the client re-subscribes and
  // fills the gap by pulling (see "Push" above). false: Subscribe is the
  // raw op, and the application re-subscribes on on_lost.
  bool resubscribe = true;
  // With resubscribe: how often a live subscription asks MAX_SEQS for its
  // conversations and pulls what it has not seen. In cluster mode a push
  // committed while a conversation's owner moves can be lost with no later
  // push to show the gap (docs/cluster.md, "Push"); this check delivers it
  // within one period. 0: never (only after each (re)subscription).
  std::chrono::milliseconds resync_every{3000};

  // TLS: every connection does a TLS handshake (TLS 1.2 or later) and
  // verifies the server's certificate before its first frame (AUTH, then
  // the calls). A failed handshake (untrusted certificate, wrong name, a
  // refused client certificate) fails the connection like a refused
  // connect: kUnavailable, retried on the next endpoint, with the reason in
  // the message ("TLS handshake with h:p: certificate verify failed:
  // hostname mismatch"). Setting any tls_* field without `tls` is an error
  // (std::invalid_argument), never a plaintext connection. Files are PEM,
  // read once at construction (a missing or bad file throws
  // std::invalid_argument).
  bool tls = false;
  std::string tls_ca_file;      // CAs to verify the server with; "" = the system's default CAs
  std::string tls_server_name;  // the name the server's certificate must match (DNS or IP SAN),
                                // sent as SNI if not an IP; "" = each endpoint's host
  std::string tls_cert_file;    // client certificate for mTLS (with tls_key_file)
  std::string tls_key_file;     // its private key, unencrypted
};

// Throws std::invalid_argument for empty or malformed endpoints or option
// values out of range.
class AsyncClient {
 public:
  AsyncClient(boost::asio::any_io_executor executor, ClientOptions options);
  // Close()s. Callbacks of calls still pending run later on the executor
  // with kCancelled (if it still runs).
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  // `count` IDs of `key` (1 to the server's max_count). `done` runs exactly
  // once, on the executor.
  void NextIds(std::string key, uint32_t count, std::function<void(ClientResult<IdBatch>)> done);
  // As NextIds, never from the prefetch cache, for the client whose token
  // id is `on_behalf_of` (1 to 255 bytes): the server charges that client's
  // limits. Needs a token with the `cluster` scope (seqd instances
  // forwarding to each other); others get PERMISSION_DENIED.
  void NextIdsOnBehalf(std::string key, uint32_t count, std::string on_behalf_of,
                       std::function<void(ClientResult<IdBatch>)> done);
  // A PING round trip; the result is the round-trip time of the answered attempt.
  void Ping(std::function<void(ClientResult<std::chrono::microseconds>)> done);

  template <typename T>
  using Done = std::function<void(ClientResult<T>)>;

  // --- ID ops (docs/protocol.md, "ID ops") ---------------------------------
  // `count` IDs of `key` as one contiguous range from one segment
  // (NEXT_BLOCK, 0x05): last - first + 1 == count. Never from the prefetch
  // cache.
  void NextBlock(std::string key, uint32_t count, Done<IdRange> done);
  // As NextBlock for the client whose token id is `on_behalf_of` (cluster
  // scope needed, as NextIdsOnBehalf).
  void NextBlockOnBehalf(std::string key, uint32_t count, std::string on_behalf_of,
                         Done<IdRange> done);
  // As NextBlock, idempotent (NEXT_BLOCK_ONCE, 0x09; dense keys only, see
  // docs/dense-keys.md): the same `token` (1 to 64 printable ASCII bytes,
  // unique per key) with the same key and count gets the same block, so a
  // request whose answer was lost may be sent again without a hole.
  void NextBlockOnce(std::string key, uint32_t count, std::string token, Done<IdRange> done);
  // As NextBlockOnce on behalf of another client (cluster scope needed).
  void NextBlockOnceOnBehalf(std::string key, uint32_t count, std::string token,
                             std::string on_behalf_of, Done<IdRange> done);
  // The largest ID handed out of each key (MAX_IDS, 0x06), in the order
  // asked; 0 for a key without a row. At most 1000 keys (else TOO_LARGE).
  void MaxIds(std::vector<std::string> keys, Done<std::vector<int64_t>> done);
  // The durable min seq of each key (GET_MIN_SEQS, 0x07); 0 if never set.
  void GetMinSeqs(std::vector<std::string> keys, Done<std::vector<int64_t>> done);
  // Sets each key's min seq (SET_MIN_SEQS, 0x08; each >= 0, no key twice),
  // durable once `done` gets true.
  void SetMinSeqs(std::vector<std::pair<std::string, int64_t>> values, Done<bool> done);
  // One of a user's seqs in each conversation (USER_SEQS, 0x0B; `field` 1
  // min, 2 max, 3 read), in the order asked; 0 if never set. At most 1000.
  void UserSeqs(std::string user, uint8_t field, std::vector<std::string> convs,
                Done<std::vector<int64_t>> done);
  // Sets (or, with raise_only, raises) one of a user's seqs in each
  // conversation (SET_USER_SEQS, 0x0C), durable once `done` gets true.
  void SetUserSeqs(std::string user, uint8_t field, bool raise_only,
                   std::vector<std::pair<std::string, int64_t>> values, Done<bool> done);

  // --- snowflake IDs (docs/protocol.md, "Snowflake ops") -------------------
  // `count` snowflake IDs (1 to the server's snowflake max count, 4096 by
  // default), ascending.
  void NextSnowflake(uint32_t count, Done<std::vector<int64_t>> done);
  // Splits `id` by the server's layout; INVALID_ARGUMENT for an ID outside it.
  void DecodeSnowflake(int64_t id, Done<DecodedSnowflake> done);

  // --- message store (docs/protocol.md, "Message store ops") ---------------
  using MessageFn = std::function<void(Message)>;
  using LostFn = std::function<void(std::vector<std::string> conv_ids, std::string reason)>;

  void Send(OutgoingMessage message, Done<SendResult> done);
  void PullRange(std::string conv_id, PullOptions options, Done<PullPage> done);
  // The messages among `seqs` that exist (in the member's window with a
  // user), ascending. If they would not fit one frame, the leading ones.
  void PullSeqs(std::string conv_id, std::vector<int64_t> seqs, std::string user_id,
                Done<std::vector<Message>> done);
  void MaxSeqs(std::vector<std::string> conv_ids, Done<std::vector<int64_t>> done);
  void SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                Done<std::vector<ConvState>> done);
  void MarkRead(std::string conv_id, std::string user_id, int64_t read_seq, Done<MemberInfo> done);
  void SetMember(std::string conv_id, std::string user_id, std::optional<int64_t> min_seq,
                 std::optional<int64_t> max_seq, bool clear_max, Done<MemberInfo> done);
  void GetMember(std::string conv_id, std::string user_id, Done<MemberInfo> done);
  // Recall or delete (status != kNormal); the result is the updated message.
  void SetStatus(std::string conv_id, int64_t seq, MessageStatus status, Done<Message> done);
  void SetConvMinSeq(std::string conv_id, int64_t min_seq, Done<int64_t> done);
  // `on_message` and `on_lost` run on the client's strand; `done` reports
  // the SUBSCRIBE answer (true). See "Push" above.
  void Subscribe(std::vector<std::string> conv_ids, MessageFn on_message, LostFn on_lost,
                 Done<bool> done);
  void Unsubscribe(std::vector<std::string> conv_ids, Done<bool> done);
  // A subscription with no conversation yet (see "Push" above and
  // Subscription below). Its callbacks run on the client's strand.
  std::unique_ptr<Subscription> NewSubscription(MessageFn on_message, LostFn on_lost = nullptr);
  // Cluster mode, between seqd instances: asks the server to run its lease
  // round now (CLUSTER_NUDGE). UNKNOWN_OPCODE without cluster mode.
  void ClusterNudge(Done<bool> done);
  // Closes connections; pending and later calls complete with kCancelled.
  void Close();

  // Store groups (docs/cluster.md, "Store groups"), with
  // ClientOptions::watch_placement (or route_by_shard): the highest
  // placement version (of the shard -> store group map) any server told
  // this client; 0 before one did (servers without store groups tell
  // none). Once a call's answer is delivered, this is at least the
  // answering server's version at the time it answered. Any thread.
  int64_t PlacementVersion() const;

  const ClientOptions& options() const;

 private:
  friend class Subscription;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Blocking client with its own I/O thread.
class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  ClientResult<IdBatch> NextIds(const std::string& key, uint32_t count = 1);
  ClientResult<int64_t> NextId(const std::string& key);
  ClientResult<std::chrono::microseconds> Ping();

  // ID ops: the AsyncClient calls, waited for.
  ClientResult<IdRange> NextBlock(const std::string& key, uint32_t count);
  ClientResult<IdRange> NextBlockOnce(const std::string& key, uint32_t count,
                                      const std::string& token);
  ClientResult<std::vector<int64_t>> MaxIds(std::vector<std::string> keys);
  ClientResult<std::vector<int64_t>> GetMinSeqs(std::vector<std::string> keys);
  ClientResult<bool> SetMinSeqs(std::vector<std::pair<std::string, int64_t>> values);
  ClientResult<std::vector<int64_t>> UserSeqs(std::string user, uint8_t field,
                                              std::vector<std::string> convs);
  ClientResult<bool> SetUserSeqs(std::string user, uint8_t field, bool raise_only,
                                 std::vector<std::pair<std::string, int64_t>> values);

  // Snowflake IDs: the AsyncClient calls, waited for.
  ClientResult<std::vector<int64_t>> NextSnowflake(uint32_t count = 1);
  ClientResult<DecodedSnowflake> DecodeSnowflake(int64_t id);

  // Message store: the AsyncClient calls, waited for.
  ClientResult<SendResult> Send(OutgoingMessage message);
  ClientResult<PullPage> PullRange(const std::string& conv_id, PullOptions options = {});
  ClientResult<std::vector<Message>> PullSeqs(const std::string& conv_id, std::vector<int64_t> seqs,
                                              const std::string& user_id = "");
  ClientResult<std::vector<int64_t>> MaxSeqs(std::vector<std::string> conv_ids);
  ClientResult<std::vector<ConvState>> SyncUser(const std::string& user_id,
                                                std::vector<std::string> conv_ids);
  ClientResult<MemberInfo> MarkRead(const std::string& conv_id, const std::string& user_id,
                                    int64_t read_seq);
  ClientResult<MemberInfo> SetMember(const std::string& conv_id, const std::string& user_id,
                                     std::optional<int64_t> min_seq = std::nullopt,
                                     std::optional<int64_t> max_seq = std::nullopt,
                                     bool clear_max = false);
  ClientResult<MemberInfo> GetMember(const std::string& conv_id, const std::string& user_id);
  ClientResult<Message> SetStatus(const std::string& conv_id, int64_t seq, MessageStatus status);
  ClientResult<int64_t> SetConvMinSeq(const std::string& conv_id, int64_t min_seq);
  // The callbacks run on the client's I/O thread; do not block in them.
  ClientResult<bool> Subscribe(std::vector<std::string> conv_ids, AsyncClient::MessageFn on_message,
                               AsyncClient::LostFn on_lost = nullptr);
  ClientResult<bool> Unsubscribe(std::vector<std::string> conv_ids);
  // AsyncClient::NewSubscription; the callbacks run on the client's I/O
  // thread. Use the Subscription's blocking Add and Remove from other threads.
  std::unique_ptr<Subscription> NewSubscription(AsyncClient::MessageFn on_message,
                                                AsyncClient::LostFn on_lost = nullptr);

  // AsyncClient::PlacementVersion().
  int64_t PlacementVersion();

  AsyncClient& async();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A subscription to a changing set of conversations, made by
// AsyncClient::NewSubscription (see "Push" above). Its calls may be made
// from any thread; `done` callbacks run on the client's strand, except
// once the client is destroyed: then they run at once with kCancelled (do
// not use a Subscription while its client is being destroyed). Destroying
// it closes it; it may outlive its client.
class Subscription {
 public:
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Adds conversations. Each one's messages after from[conv] (after its max
  // seq when Add was called, if not in `from`) reach on_message, once, in
  // seq order, through lost connections and restarts. Conversations the
  // subscription has already are left as they are (their from is ignored).
  // `done` gets true once the server accepted their SUBSCRIBE, or the error
  // (of MAX_SEQS or SUBSCRIBE; kInvalidArgument for an empty id, an id
  // listed twice or a negative from; kCancelled once closed): then none of
  // conv_ids was added. A client's conversations together are at most the
  // server's tcp_max_subscriptions (10,000 by default): past it, kTooLarge.
  void Add(std::vector<std::string> conv_ids, std::map<std::string, int64_t> from,
           AsyncClient::Done<bool> done);
  // Removes conversations at a cut: each one's max seq when Remove asks
  // (MAX_SEQS). Every message up to the cut still reaches on_message, once,
  // in order (those queued, and those still to pull: some after `done`),
  // none after it: every message acked before Remove was called arrives,
  // none sent after `done` ran. `done` gets the MAX_SEQS error (nothing
  // removed), or runs once the cut is set and, for conversations no other
  // subscription of the client holds, the server answered the UNSUBSCRIBE
  // (true; an error means only that the server was not told: its pushes
  // are dropped). Unknown conversations are ignored; a removed one may be
  // added again: it starts afresh once the removed one reached its cut.
  // Add and Remove of one subscription run one at a time, in call order.
  void Remove(std::vector<std::string> conv_ids, AsyncClient::Done<bool> done);
  // Blocking forms: wait for `done`. Never call them on the client's
  // executor (from a callback): they would wait forever.
  ClientResult<bool> Add(std::vector<std::string> conv_ids,
                         std::map<std::string, int64_t> from = {});
  ClientResult<bool> Remove(std::vector<std::string> conv_ids);
  // Drops every conversation at once (nothing more of them arrives, not
  // even what is queued); later Adds fail with kCancelled.
  void Close();

  struct Impl;

 private:
  friend class AsyncClient;
  explicit Subscription(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Cluster mode (docs/cluster.md): the shard of `key` among `shards`, as
// every seqd instance computes it: FNV-1a-64 of the key bytes mod shards.
// REQUIRES: shards >= 1.
uint32_t ShardOf(std::string_view key, uint32_t shards);

// Splits "host:port" or "[v6]:port" (port 1..65535) into its parts; false if
// malformed (a bare IPv6 address needs brackets).
bool SplitEndpoint(const std::string& s, std::string& host, std::string& port);

}  // namespace seqd::client
