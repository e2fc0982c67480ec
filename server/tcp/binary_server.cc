#include "server/tcp/binary_server.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"
#include "server/core/log.h"
#include "server/core/segment_allocator.h"
#include "server/metrics/metrics.h"
#include "server/msg/message_service.h"
#include "server/net/tcp_listener.h"
#include "server/service/services.h"
#include "server/service/wire_errors.h"
#include "server/snowflake/snowflake_generator.h"

namespace seqd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Strand = TcpListener::Strand;
using Socket = TcpListener::Socket;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                        net::wait_traits<std::chrono::steady_clock>, Strand>;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr size_t kInitialReadBuffer = 16 * 1024;
constexpr size_t kMinReadSpace = 4 * 1024;       // free room asked of each read
constexpr size_t kKeepBufferBytes = 256 * 1024;  // larger idle buffers are freed
constexpr std::chrono::seconds kLingerTime{2};   // after a protocol error frame
constexpr size_t kLingerBytes = 1 << 20;         // discarded at most while lingering
constexpr size_t kInlineRanges = 4;              // ranges converted without allocating

// The `op` label of a binary opcode (docs/metrics.md).
std::string_view BinaryOpName(uint8_t opcode) {
  const auto op = static_cast<proto::Opcode>(opcode);
  if (op == proto::Opcode::kPing) return "ping";
  if (op == proto::Opcode::kNextIds) return "next_ids";
  if (op == proto::kOpSend) return "msg_send";
  if (op == proto::kOpPullRange || op == proto::kOpPullSeqs) return "msg_pull";
  if (op == proto::kOpMaxSeqs || op == proto::kOpSyncUser) return "msg_batch";
  if (op == proto::kOpMarkRead || op == proto::kOpSetMember || op == proto::kOpGetMember) {
    return "msg_member";
  }
  if (op == proto::kOpSetStatus || op == proto::kOpSetConvMinSeq) return "msg_status";
  if (op == proto::kOpSubscribe || op == proto::kOpUnsubscribe) return "subscribe";
  if (op == proto::kOpSnowflake) return "snowflake";
  if (op == proto::kOpSnowflakeDecode) return "snowflake_decode";
  return "protocol_error";
}

// The `status` label of a wire status: its name in lower case.
std::string StatusLabel(proto::Status s) {
  std::string name(proto::StatusName(s));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

proto::MessageView View(const StoredMessage& m) {
  return proto::MessageView{m.seq,           m.server_msg_id, m.sender_id,
                            m.client_msg_id, m.content_type,  static_cast<uint8_t>(m.status),
                            m.send_time_ms,  m.payload};
}

proto::MemberRes ToWire(const MemberView& v) {
  return proto::MemberRes{{v.state.min_seq, v.state.max_seq, v.state.read_seq}};
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

std::optional<std::string> OptString(std::string_view s) {
  if (s.empty()) return std::nullopt;
  return std::string(s);
}

// The leading messages of `messages` whose encoding, after `fixed` bytes of
// frame, fits in `max_frame`.
std::vector<proto::MessageView> Fitting(const std::vector<StoredMessage>& messages, size_t fixed,
                                        size_t max_frame) {
  std::vector<proto::MessageView> out;
  out.reserve(messages.size());
  size_t size = fixed;
  for (const StoredMessage& m : messages) {
    proto::MessageView v = View(m);
    size += proto::EncodedSize(v);
    if (size > max_frame) break;
    out.push_back(v);
  }
  return out;
}

}  // namespace

struct BinaryServer::Impl {
  Impl(BinaryServerOptions options_, const Services& services)
      : options(std::move(options_)),
        allocator(services.ids),
        messages(&services.messages),
        snowflake(services.snowflake.enabled() ? &services.snowflake : nullptr),
        metrics(&services.metrics) {}

  const BinaryServerOptions options;
  SegmentAllocator& allocator;
  MessageService* const messages;         // never null
  SnowflakeGenerator* const snowflake;    // null with snowflake = off: its ops are unknown
  Metrics* const metrics;                 // never null
  std::shared_ptr<TcpListener> listener;  // set once, by the constructor
};

namespace {

// One connection. Every member is touched only on the connection's strand,
// except strand_ and allocator_ (immutable).
//
// Accounting: a request is "unanswered" from the moment it is decoded until
// its response has been written: pending_ (at the allocator), then queued_
// (in out_), then writing_count_ (in wbuf_, being written). Their sum is
// capped at max_in_flight, which also bounds the output buffers.
class Session : public ListenedSession, public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<BinaryServer::Impl> server)
      : socket_(std::move(socket)),
        strand_(socket_.get_executor()),
        timer_(strand_),
        server_(std::move(server)),
        allocator_(server_->allocator),
        max_in_flight_(std::max<size_t>(1, server_->options.max_in_flight)),
        max_frame_(std::min(server_->options.max_frame_bytes, proto::kMaxFrameSize)),
        max_output_(std::max(server_->options.max_output_bytes, max_frame_)),
        idle_(server_->options.idle_timeout) {}

  ~Session() override {
    // No listener may run once the subscriptions are gone; drop them before
    // the push box (they reference it).
    subs_.clear();
  }

  // Never with `reject`: over-capacity connections are closed at once.
  void Start(bool /*reject*/) override {
    net::dispatch(strand_, [self = shared_from_this()] {
      self->last_activity_ = SteadyClock::now();
      if (self->idle_.count() > 0) self->ArmTimer(self->last_activity_ + self->idle_);
      self->StartRead();
    });
  }

  // Server shutdown: close now if nothing is in flight, else once the
  // requests in flight are answered. Nothing more is read.
  void Stop() override {
    net::post(strand_, [self = shared_from_this()] {
      self->stopping_ = true;
      self->MaybeFinish();
    });
  }

 private:
  size_t unanswered() const { return pending_ + queued_ + writing_count_; }
  size_t unsent() const { return out_.size() + wbuf_.size(); }
  bool output_full() const { return unsent() >= max_output_; }

  // --- reading -------------------------------------------------------------

  void StartRead() {
    if (reading_ || closed_ || closing_ || stopping_ || read_eof_) return;
    if (unanswered() >= max_in_flight_) return;  // backpressure: resumed by OnWrite
    if (output_full()) return;                   // the same, on bytes
    const size_t have = in_end_ - in_begin_;
    size_t need = kMinReadSpace;
    if (have >= 4) {  // room for the whole partial frame (its length is valid)
      const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + in_begin_);
      const size_t frame =
          4 + ((size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]});
      if (frame > have) need = std::max(need, std::min(frame, max_frame_) - have);
    }
    if (in_.size() - in_end_ < need) {
      if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, have);
        in_begin_ = 0;
        in_end_ = have;
      }
      if (in_.size() - in_end_ < need) {
        in_.resize(std::max({in_end_ + need, in_.size() * 2, kInitialReadBuffer}));
      }
    }
    reading_ = true;
    socket_.async_read_some(
        net::buffer(in_.data() + in_end_, in_.size() - in_end_),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(error_code ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    if (lingering_) {
      discarded_ += n;
      if (ec || discarded_ > kLingerBytes) return Close();
      return DoDiscard();
    }
    if (ec) {
      if (ec == net::error::eof) {  // the client is done sending: answer, then close
        read_eof_ = true;
        return MaybeFinish();
      }
      return Close();  // reset, aborted, ...
    }
    in_end_ += n;
    last_activity_ = SteadyClock::now();
    if (stopping_ || closing_) return;  // draining: new requests are not served
    ProcessInput();
  }

  // Handles every complete frame in the input buffer (up to the in-flight
  // cap), then writes what was answered and reads on. REQUIRES: the caller
  // holds a reference to the session.
  void ProcessInput() {
    if (closed_ || closing_ || stopping_) return;
    in_batch_ = true;
    while (in_begin_ < in_end_ && unanswered() < max_in_flight_ && !output_full()) {
      const std::string_view input(in_.data() + in_begin_, in_end_ - in_begin_);
      const proto::DecodeResult r = proto::DecodeFrame(input, max_frame_);
      if (r.state == proto::DecodeState::kNeedMore) break;
      if (r.state == proto::DecodeState::kError) {
        ProtocolError(r.error, proto::DescribeDecodeError(input, max_frame_));
        break;
      }
      // The frame stays valid: nothing reuses the buffer until the loop ends.
      in_begin_ += r.consumed;
      HandleFrame(r.frame);
      if (closing_ || stopping_) break;
    }
    in_batch_ = false;
    if (pending_ == 0) self_keep_.reset();  // safe: our caller holds a reference
    if (in_begin_ == in_end_ && !reading_) {
      in_begin_ = in_end_ = 0;
      if (in_.size() > kKeepBufferBytes) std::vector<char>().swap(in_);
    }
    Flush();
    StartRead();
  }

  // --- requests ------------------------------------------------------------

  void HandleFrame(const proto::FrameView& f) {
    if (f.is_response()) {
      return ProtocolError(proto::Status::kMalformedFrame,
                           "malformed frame: RESPONSE flag set on a request");
    }
    switch (static_cast<proto::Opcode>(f.opcode)) {
      case proto::Opcode::kPing:
        if (f.payload.size() > proto::kMaxPingPayload) {
          Count(f.opcode, f.request_id, proto::Status::kInvalidArgument);
          proto::AppendError(out_, proto::Opcode::kPing, f.request_id,
                             proto::Status::kInvalidArgument,
                             "PING payload must be at most 1024 bytes");
        } else {
          Count(f.opcode, f.request_id, proto::Status::kOk);
          proto::AppendOkPing(out_, f.request_id, f.payload);
        }
        ++queued_;
        return;
      case proto::Opcode::kNextIds:
        return HandleNextIds(f);
      default:
        if (server_->messages != nullptr && proto::IsMessageOpcode(f.opcode)) {
          return HandleMessageOp(f);
        }
        if (server_->snowflake != nullptr && proto::IsSnowflakeOpcode(f.opcode)) {
          return HandleSnowflakeOp(f);
        }
        break;
    }
    char message[32];
    std::snprintf(message, sizeof(message), "unknown opcode 0x%02x", unsigned{f.opcode});
    Count(0xff, f.request_id, proto::Status::kUnknownOpcode);
    proto::AppendError(out_, static_cast<proto::Opcode>(f.opcode), f.request_id,
                       proto::Status::kUnknownOpcode, message);
    ++queued_;
  }

  void HandleNextIds(const proto::FrameView& f) {
    const std::optional<proto::NextIdsRequest> req = proto::ParseNextIdsRequest(f.payload);
    if (!req) {
      Count(f.opcode, f.request_id, proto::Status::kInvalidArgument);
      proto::AppendError(out_, proto::Opcode::kNextIds, f.request_id,
                         proto::Status::kInvalidArgument,
                         "NEXT_IDS payload must be u16 key_length, key, u32 count");
      ++queued_;
      return;
    }
    // The session outlives every request in flight (see OnTakeDone).
    if (pending_++ == 0 && !self_keep_) self_keep_ = shared_from_this();
    // Small and trivially copyable: std::function stores it without allocating.
    auto done = [session = this, id = f.request_id](Result<IdBatch> r) {
      session->OnTakeResult(id, std::move(r));
    };
    static_assert(sizeof(done) <= 16 && std::is_trivially_copyable_v<decltype(done)>);
    allocator_.Take(req->key, req->count, done);  // the key is not kept past the call
  }

  // Any thread. Inline when already on the strand (the allocator's fast path).
  void OnTakeResult(uint32_t id, Result<IdBatch> r) {
    net::dispatch(strand_,
                  [this, id, r = std::move(r)]() mutable { OnTakeDone(id, std::move(r)); });
  }

  void OnTakeDone(uint32_t id, Result<IdBatch> r) {
    // Inside a batch the caller holds a reference and releases self_keep_
    // once at the end (saves a pair of atomic operations per request).
    // Otherwise this may be the last reference: released on return.
    std::shared_ptr<Session> keep;
    if (--pending_ == 0 && !in_batch_) keep = std::move(self_keep_);
    if (closed_ || closing_) return;  // nobody to answer, or after the error frame
    if (r.ok()) {
      const auto& ranges = r->ranges;
      if (ranges.size() <= kInlineRanges) {
        proto::IdRangeWire wire[kInlineRanges];
        for (size_t i = 0; i < ranges.size(); ++i) wire[i] = {ranges[i].first, ranges[i].last};
        proto::AppendOkNextIds(out_, id, wire, ranges.size());
      } else {
        std::vector<proto::IdRangeWire> wire;
        wire.reserve(ranges.size());
        for (const IdRange& range : ranges) wire.push_back({range.first, range.last});
        proto::AppendOkNextIds(out_, id, wire.data(), wire.size());
      }
      Count(static_cast<uint8_t>(proto::Opcode::kNextIds), id, proto::Status::kOk);
    } else {
      const BinaryError w = ToBinaryError(r.error());
      Count(static_cast<uint8_t>(proto::Opcode::kNextIds), id, w.status);
      proto::AppendError(out_, proto::Opcode::kNextIds, id, w.status, w.message);
      if (w.status == proto::Status::kShuttingDown) stopping_ = true;  // closed after it
    }
    ++queued_;
    if (!in_batch_) Flush();  // in a batch, ProcessInput flushes once at the end
  }

  // --- message store ops ---------------------------------------------------

  // Metrics and the error log line of one answer.
  void Count(uint8_t opcode, uint32_t id, proto::Status status) {
    Metrics* metrics = server_->metrics;
    if (status == proto::Status::kOk) {
      if (metrics) metrics->CountRequest(Interface::kBinary, BinaryOpName(opcode), "ok");
      return;
    }
    const std::string label = StatusLabel(status);
    if (metrics) metrics->CountRequest(Interface::kBinary, BinaryOpName(opcode), label);
    if (status == proto::Status::kStoreUnavailable || status == proto::Status::kInternal) {
      SEQD_LOG(kWarn) << "binary request_id=" << id << " conn=" << static_cast<const void*>(this)
                      << " op=" << BinaryOpName(opcode) << " status=" << label;
    } else {
      SEQD_LOG(kDebug) << "binary request_id=" << id << " conn=" << static_cast<const void*>(this)
                       << " op=" << BinaryOpName(opcode) << " status=" << label;
    }
  }

  void AnswerError(proto::Opcode op, uint32_t id, proto::Status status, std::string_view message) {
    Count(static_cast<uint8_t>(op), id, status);
    proto::AppendError(out_, op, id, status, message);
    ++queued_;
  }

  // A callback for a MessageService or SnowflakeGenerator call: counts the
  // request as pending and, when the service answers (inline, or on any
  // other thread), encodes the result on the strand with
  // `encode(out, id, value)`.
  template <typename T, typename Encode>
  std::function<void(Result<T>)> Reply(proto::Opcode op, uint32_t id, Encode encode) {
    if (pending_++ == 0 && !self_keep_) self_keep_ = shared_from_this();
    return [this, op, id, encode = std::move(encode)](Result<T> r) mutable {
      net::dispatch(strand_,
                    [this, op, id, encode = std::move(encode), r = std::move(r)]() mutable {
                      OnMessageDone(op, id, std::move(r), encode);
                    });
    };
  }

  template <typename T, typename Encode>
  void OnMessageDone(proto::Opcode op, uint32_t id, Result<T> r, Encode& encode) {
    std::shared_ptr<Session> keep;
    if (--pending_ == 0 && !in_batch_) keep = std::move(self_keep_);
    if (closed_ || closing_) return;
    if (r.ok()) {
      Count(static_cast<uint8_t>(op), id, proto::Status::kOk);
      encode(out_, id, *r);
    } else {
      const BinaryError w = ToBinaryError(r.error());
      Count(static_cast<uint8_t>(op), id, w.status);
      proto::AppendError(out_, op, id, w.status, w.message);
      if (w.status == proto::Status::kShuttingDown) stopping_ = true;
    }
    ++queued_;
    PublishUnsent();
    if (!in_batch_) Flush();
  }

  // Encodes a fixed-shape result.
  template <typename Wire, typename T, typename Convert>
  static auto Encoder(proto::Opcode op, Convert convert) {
    return [op, convert](std::string& out, uint32_t id, const T& value) {
      proto::AppendOkResult(out, op, id, convert(value));
    };
  }

  template <typename Req>
  std::optional<Req> Decode(const proto::FrameView& f) {
    std::optional<Req> req = proto::DecodeBody<Req>(f.payload);
    if (!req) {
      AnswerError(Req::kOpcode, f.request_id, proto::Status::kInvalidArgument,
                  "malformed " + std::string(proto::MessageOpName(f.opcode)) +
                      " payload (see docs/protocol.md)");
    }
    return req;
  }

  void HandleMessageOp(const proto::FrameView& f) {
    MessageService& svc = *server_->messages;
    const uint32_t id = f.request_id;
    const auto op = static_cast<proto::Opcode>(f.opcode);
    if (op == proto::kOpSend) {
      auto q = Decode<proto::SendReq>(f);
      if (!q) return;
      SendRequest req{std::string(q->conv_id), std::string(q->sender_id),
                      std::string(q->client_msg_id), q->content_type, std::string(q->payload)};
      svc.Send(std::move(req),
               Reply<AppendOutcome>(
                   op, id, Encoder<proto::SendRes, AppendOutcome>(op, [](const AppendOutcome& o) {
                     return proto::SendRes{o.seq, o.server_msg_id, o.send_time_ms, o.duplicate};
                   })));
      return;
    }
    if (op == proto::kOpPullRange) {
      auto q = Decode<proto::PullRangeReq>(f);
      if (!q) return;
      PullRequest req;
      req.conv_id = std::string(q->conv_id);
      req.from_seq = q->from_seq;
      if (q->to_seq != 0) req.to_seq = q->to_seq;
      req.limit = q->limit;
      req.descending = q->descending;
      req.user_id = OptString(q->user_id);
      const size_t max_frame = max_frame_;
      svc.Pull(std::move(req),
               Reply<MessagePage>(
                   op, id, [max_frame](std::string& out, uint32_t rid, const MessagePage& p) {
                     proto::PullRangeRes res;
                     res.messages = Fitting(p.messages, proto::kHeaderSize + 7, max_frame);
                     if (res.messages.empty() && !p.messages.empty()) {
                       proto::AppendError(out, proto::kOpPullRange, rid, proto::Status::kTooLarge,
                                          "message does not fit in a frame");
                       return;
                     }
                     res.is_end = !p.more && res.messages.size() == p.messages.size();
                     proto::AppendOkResult(out, proto::kOpPullRange, rid, res);
                   }));
      return;
    }
    if (op == proto::kOpPullSeqs) {
      auto q = Decode<proto::PullSeqsReq>(f);
      if (!q) return;
      const size_t max_frame = max_frame_;
      svc.PullSeqs(
          std::string(q->conv_id), std::move(q->seqs), OptString(q->user_id),
          Reply<std::vector<StoredMessage>>(
              op, id,
              [max_frame](std::string& out, uint32_t rid, const std::vector<StoredMessage>& ms) {
                proto::PullSeqsRes res;
                res.messages = Fitting(ms, proto::kHeaderSize + 6, max_frame);
                if (res.messages.empty() && !ms.empty()) {
                  proto::AppendError(out, proto::kOpPullSeqs, rid, proto::Status::kTooLarge,
                                     "message does not fit in a frame");
                  return;
                }
                proto::AppendOkResult(out, proto::kOpPullSeqs, rid, res);
              }));
      return;
    }
    if (op == proto::kOpMaxSeqs) {
      auto q = Decode<proto::MaxSeqsReq>(f);
      if (!q) return;
      svc.MaxSeqs(Strings(q->conv_ids),
                  Reply<std::vector<int64_t>>(
                      op, id,
                      Encoder<proto::MaxSeqsRes, std::vector<int64_t>>(
                          op, [](const std::vector<int64_t>& v) { return proto::MaxSeqsRes{v}; })));
      return;
    }
    if (op == proto::kOpSyncUser) {
      auto q = Decode<proto::SyncUserReq>(f);
      if (!q) return;
      svc.SyncUser(std::string(q->user_id), Strings(q->conv_ids),
                   Reply<std::vector<ConvSync>>(
                       op, id, [](std::string& out, uint32_t rid, const std::vector<ConvSync>& v) {
                         proto::SyncUserRes res;
                         res.convs.reserve(v.size());
                         for (const ConvSync& c : v) {
                           res.convs.push_back(
                               {c.conv_id, c.max_seq, c.min_seq, c.read_seq, c.unread, c.member});
                         }
                         proto::AppendOkResult(out, proto::kOpSyncUser, rid, res);
                       }));
      return;
    }
    auto member_encoder = [op](std::string& out, uint32_t rid, const MemberView& v) {
      proto::AppendOkResult(out, op, rid, ToWire(v));
    };
    if (op == proto::kOpMarkRead) {
      auto q = Decode<proto::MarkReadReq>(f);
      if (!q) return;
      svc.MarkRead(std::string(q->conv_id), std::string(q->user_id), q->read_seq,
                   Reply<MemberView>(op, id, member_encoder));
      return;
    }
    if (op == proto::kOpSetMember) {
      auto q = Decode<proto::SetMemberReq>(f);
      if (!q) return;
      svc.SetMember(std::string(q->conv_id), std::string(q->user_id), q->min_seq, q->max_seq,
                    q->clear_max, Reply<MemberView>(op, id, member_encoder));
      return;
    }
    if (op == proto::kOpGetMember) {
      auto q = Decode<proto::GetMemberReq>(f);
      if (!q) return;
      svc.GetMember(std::string(q->conv_id), std::string(q->user_id),
                    Reply<MemberView>(op, id, member_encoder));
      return;
    }
    if (op == proto::kOpSetStatus) {
      auto q = Decode<proto::SetStatusReq>(f);
      if (!q) return;
      svc.SetStatus(
          std::string(q->conv_id), q->seq, static_cast<MessageStatus>(q->status),
          Reply<StoredMessage>(op, id, [](std::string& out, uint32_t rid, const StoredMessage& m) {
            proto::AppendOkResult(out, proto::kOpSetStatus, rid, proto::MessageRes{View(m)});
          }));
      return;
    }
    if (op == proto::kOpSetConvMinSeq) {
      auto q = Decode<proto::SetConvMinSeqReq>(f);
      if (!q) return;
      svc.SetConvMinSeq(
          std::string(q->conv_id), q->min_seq,
          Reply<int64_t>(op, id, Encoder<proto::MinSeqRes, int64_t>(op, [](int64_t v) {
                           return proto::MinSeqRes{v};
                         })));
      return;
    }
    if (op == proto::kOpSubscribe) return HandleSubscribe(f);
    if (op == proto::kOpUnsubscribe) {
      auto q = Decode<proto::UnsubscribeReq>(f);
      if (!q) return;
      if (q->conv_ids.size() > proto::kMaxWireList) {
        return AnswerError(op, id, proto::Status::kTooLarge,
                           "at most 1000 conversations per UNSUBSCRIBE");
      }
      for (std::string_view c : q->conv_ids) {
        auto it = subs_.find(c);
        if (it != subs_.end()) subs_.erase(it);  // never called again once destroyed
      }
      Count(static_cast<uint8_t>(op), id, proto::Status::kOk);
      proto::AppendOkResult(out_, op, id, proto::EmptyRes{});
      ++queued_;
      return;
    }
    AnswerError(op, id, proto::Status::kInvalidArgument,
                std::string(proto::MessageOpName(f.opcode)) + " is sent by the server only");
  }

  // --- snowflake ops ---------------------------------------------------------

  void HandleSnowflakeOp(const proto::FrameView& f) {
    SnowflakeGenerator& gen = *server_->snowflake;
    const uint32_t id = f.request_id;
    if (static_cast<proto::Opcode>(f.opcode) == proto::kOpSnowflake) {
      const auto op = proto::kOpSnowflake;
      const std::optional<uint32_t> count = proto::ParseSnowflakeRequest(f.payload);
      if (!count) {
        return AnswerError(op, id, proto::Status::kInvalidArgument,
                           "SNOWFLAKE payload must be u32 count");
      }
      // The generator checks 1 <= count <= its max; the answer must also
      // fit in a frame whatever that max is.
      if (*count > proto::kMaxSnowflakeIdsPerFrame) {
        return AnswerError(op, id, proto::Status::kInvalidArgument,
                           "count must be at most " +
                               std::to_string(proto::kMaxSnowflakeIdsPerFrame) + " per frame");
      }
      // Answered inline, or later from the generator's timer thread.
      gen.Next(*count, Reply<SnowflakeIds>(
                           op, id, [](std::string& out, uint32_t rid, const SnowflakeIds& v) {
                             proto::AppendOkSnowflake(out, rid, v.data(), v.size());
                           }));
      return;
    }
    const auto op = proto::kOpSnowflakeDecode;
    const std::optional<int64_t> raw = proto::ParseSnowflakeDecodeRequest(f.payload);
    if (!raw) {
      return AnswerError(op, id, proto::Status::kInvalidArgument,
                         "SNOWFLAKE_DECODE payload must be i64 id");
    }
    const Result<SnowflakeFields> fields = gen.Decode(*raw);  // pure: answered at once
    if (!fields) {
      const BinaryError w = ToBinaryError(fields.error());
      return AnswerError(op, id, w.status, w.message);
    }
    Count(static_cast<uint8_t>(op), id, proto::Status::kOk);
    proto::AppendOkSnowflakeDecode(out_, id, {fields->time_ms, fields->worker, fields->sequence});
    ++queued_;
  }

  // --- push ----------------------------------------------------------------

  // Shared by the session (strand) and its listeners (writer threads).
  struct PushBox {
    PushBox(Strand s, size_t max_output, size_t max_frame)
        : strand(std::move(s)), max_output(max_output), max_frame(max_frame) {}
    const Strand strand;
    const size_t max_output;
    const size_t max_frame;
    std::weak_ptr<Session> session;  // set once, before any listener exists
    std::atomic<size_t> unsent{0};   // the session's out_ + wbuf_ bytes, as last published

    std::mutex mu;
    std::string buf;       // push frames not yet moved to out_
    bool posted = false;   // a drain is queued on the strand
    bool dropped = false;  // over the cap: pushes discarded until the drain drops the subscriptions
  };

  // Writer thread. Never blocks on the connection.
  static void OnPush(PushBox& box, const StoredMessage& m) {
    std::lock_guard<std::mutex> lock(box.mu);
    if (box.dropped) return;
    const size_t before = box.buf.size();
    proto::AppendPushMessage(box.buf, proto::PushMessage{m.conv_id, View(m)});
    if (box.buf.size() - before > box.max_frame ||
        box.buf.size() + box.unsent.load(std::memory_order_relaxed) > box.max_output) {
      box.buf.resize(before);
      box.dropped = true;
    }
    if (!box.posted) {
      box.posted = true;
      net::post(box.strand, [weak = box.session] {
        if (std::shared_ptr<Session> self = weak.lock()) self->DrainPush();
      });
    }
  }

  void PublishUnsent() {
    if (push_) push_->unsent.store(unsent(), std::memory_order_relaxed);
  }

  void DrainPush() {
    std::string data;
    bool dropped;
    {
      std::lock_guard<std::mutex> lock(push_->mu);
      data.swap(push_->buf);
      push_->posted = false;
      dropped = push_->dropped;
    }
    if (closed_ || closing_) return;
    out_ += data;
    if (dropped) {
      // Destroyed outside the lock: a listener may be waiting for it.
      subs_.clear();
      {
        std::lock_guard<std::mutex> lock(push_->mu);
        push_->dropped = false;
        push_->buf.clear();  // nothing was queued while dropped
      }
      SEQD_LOG(kDebug) << "binary: push backlog over " << max_output_
                       << " bytes: subscriptions dropped";
      proto::AppendPushDropped(out_, proto::Status::kTooLarge,
                               "push backlog over " + std::to_string(max_output_) +
                                   " bytes: subscriptions dropped; pull to re-sync");
    }
    PublishUnsent();
    Flush();
  }

  void HandleSubscribe(const proto::FrameView& f) {
    const auto op = proto::kOpSubscribe;
    auto q = Decode<proto::SubscribeReq>(f);
    if (!q) return;
    if (q->conv_ids.size() > proto::kMaxWireList) {
      return AnswerError(op, f.request_id, proto::Status::kTooLarge,
                         "at most 1000 conversations per SUBSCRIBE");
    }
    if (!push_) {
      push_ = std::make_shared<PushBox>(strand_, max_output_, max_frame_);
      push_->session = weak_from_this();
      PublishUnsent();
    }
    // All or nothing: new subscriptions are made aside, then kept.
    std::map<std::string, std::unique_ptr<Subscription>, std::less<>> added;
    for (std::string_view c : q->conv_ids) {
      if (subs_.count(c) || added.count(c)) continue;
      if (subs_.size() + added.size() >= server_->options.max_subscriptions) {
        return AnswerError(op, f.request_id, proto::Status::kTooLarge,
                           "at most " + std::to_string(server_->options.max_subscriptions) +
                               " subscriptions per connection");
      }
      Result<std::unique_ptr<Subscription>> sub = server_->messages->Subscribe(
          {std::string(c)}, [box = push_](const StoredMessage& m) { OnPush(*box, m); });
      if (!sub.ok()) {
        const BinaryError w = ToBinaryError(sub.error());
        return AnswerError(op, f.request_id, w.status, w.message);
      }
      added.emplace(std::string(c), std::move(sub.value()));
    }
    subs_.merge(added);
    Count(static_cast<uint8_t>(op), f.request_id, proto::Status::kOk);
    proto::AppendOkResult(out_, op, f.request_id, proto::EmptyRes{});
    ++queued_;
  }

  // Sends one error frame, then closes (after lingering).
  void ProtocolError(proto::Status status, std::string_view message) {
    if (server_->metrics) {
      server_->metrics->CountRequest(Interface::kBinary, "protocol_error", StatusLabel(status));
    }
    SEQD_LOG(kDebug) << "binary: closing connection: " << proto::StatusName(status) << ": "
                     << message;
    closing_ = true;
    proto::AppendProtocolError(out_, status, message);
  }

  // --- writing -------------------------------------------------------------

  void Flush() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    out_.swap(wbuf_);  // wbuf_ was empty: out_ keeps its capacity for next time
    writing_count_ = queued_;
    queued_ = 0;
    PublishUnsent();
    net::async_write(socket_, net::buffer(wbuf_),
                     [self = shared_from_this()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    writing_count_ = 0;
    if (wbuf_.capacity() > kKeepBufferBytes) {
      std::string().swap(wbuf_);
    } else {
      wbuf_.clear();
    }
    if (closed_) return;
    if (ec) return Close();
    last_activity_ = SteadyClock::now();
    PublishUnsent();
    Flush();  // whatever accumulated meanwhile
    if (closing_) {
      if (!writing_) Linger();  // the error frame is out
      return;
    }
    if (stopping_ || read_eof_) return MaybeFinish();
    if (!reading_) ProcessInput();  // below the cap again: handle buffered frames, read on
  }

  // --- closing -------------------------------------------------------------

  // Closes once nothing is unanswered (draining or after the client's EOF).
  void MaybeFinish() {
    if (!closed_ && unanswered() == 0) Close();
  }

  // Half-closes, then discards what the client still sends until it closes,
  // the linger time passes or too much arrives. Closing with unread input
  // would reset the connection and could destroy the error frame.
  void Linger() {
    lingering_ = true;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    const auto linger = idle_.count() > 0 ? std::min<SteadyClock::duration>(kLingerTime, idle_)
                                          : SteadyClock::duration(kLingerTime);
    ArmTimer(SteadyClock::now() + linger);
    if (!reading_) DoDiscard();
  }

  void DoDiscard() {
    if (in_.size() < kMinReadSpace) in_.resize(kMinReadSpace);
    reading_ = true;
    socket_.async_read_some(
        net::buffer(in_.data(), in_.size()),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    socket_.close(ignored);  // aborts the read and write in flight
    timer_.cancel();
    out_.clear();
    queued_ = 0;
    subs_.clear();  // no more pushes
    // Requests still at the allocator keep the session (self_keep_) until
    // they complete; their answers are dropped.
  }

  // --- idle timeout --------------------------------------------------------

  void ArmTimer(SteadyClock::time_point when) {
    timer_.expires_at(when);
    timer_.async_wait([self = shared_from_this()](error_code ec) { self->OnTimer(ec); });
  }

  // Checks the last activity instead of re-arming on every request.
  void OnTimer(error_code ec) {
    if (ec || closed_) return;  // cancelled or re-armed
    if (lingering_) return Close();
    const auto now = SteadyClock::now();
    if (unanswered() > 0 || !subs_.empty()) return ArmTimer(now + idle_);  // busy: not idle
    if (now - last_activity_ >= idle_) {
      SEQD_LOG(kDebug) << "binary: closing idle connection";
      return Close();
    }
    ArmTimer(last_activity_ + idle_);
  }

  Socket socket_;
  const Strand strand_;
  Timer timer_;
  std::shared_ptr<BinaryServer::Impl> server_;
  SegmentAllocator& allocator_;
  const size_t max_in_flight_;
  const size_t max_frame_;
  const size_t max_output_;
  const std::chrono::seconds idle_;
  std::shared_ptr<PushBox> push_;  // made by the first SUBSCRIBE
  std::map<std::string, std::unique_ptr<Subscription>, std::less<>> subs_;  // by conversation

  std::vector<char> in_;  // received bytes; [in_begin_, in_end_) not yet handled
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  std::string out_;   // responses waiting for the next write
  std::string wbuf_;  // responses being written
  size_t pending_ = 0;
  size_t queued_ = 0;
  size_t writing_count_ = 0;
  std::shared_ptr<Session> self_keep_;  // set while pending_ > 0
  SteadyClock::time_point last_activity_{};
  size_t discarded_ = 0;

  bool reading_ = false;    // an async_read_some is in flight
  bool writing_ = false;    // an async_write is in flight
  bool in_batch_ = false;   // inside ProcessInput's loop: defer Flush
  bool read_eof_ = false;   // the client shut down its side
  bool stopping_ = false;   // draining: answer what is in flight, then close
  bool closing_ = false;    // protocol error: error frame queued, then close
  bool lingering_ = false;  // error frame written; discarding input until close
  bool closed_ = false;
};

}  // namespace

BinaryServer::BinaryServer(net::io_context& io, BinaryServerOptions options,
                           const Services& services)
    : impl_(std::make_shared<Impl>(std::move(options), services)) {
  const BinaryServerOptions& o = impl_->options;
  impl_->listener = MakeTcpListener(
      io, {"binary", o.address, o.port, o.max_connections, /*sessions_reject=*/false}, impl_,
      [](TcpListener::Socket socket, std::shared_ptr<Impl> impl) {
        return std::make_shared<Session>(std::move(socket), std::move(impl));
      });
}

BinaryServer::~BinaryServer() { impl_->listener->CloseAcceptor(); }

Status BinaryServer::Listen() { return impl_->listener->Listen(); }

uint16_t BinaryServer::port() const { return impl_->listener->port(); }

Status BinaryServer::Serve(int fd) { return impl_->listener->Serve(fd); }

size_t BinaryServer::open_connections() const { return impl_->listener->open_connections(); }

void BinaryServer::Stop(std::function<void()> drained) {
  impl_->listener->Stop(std::move(drained));
}

}  // namespace seqd
