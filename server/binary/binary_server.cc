// The binary protocol's connections: socket I/O, back-pressure, lingering
// after a protocol error, the idle timeout and draining the push box
// (binary_push_box.h). Requests go to BinaryDispatcher
// (binary_dispatcher.h). One connection's state machine is one class: its
// counters and flags (unanswered = pending + queued + writing) are kept
// together so their invariants can be read in one place.
#include "server/binary/binary_server.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <vector>

#include "proto/cluster_codec.h"
#include "proto/message_codec.h"
#include "server/base/log.h"
#include "server/binary/binary_dispatcher.h"
#include "server/binary/binary_push_box.h"
#include "server/binary/frame_read_room.h"
#include "server/net/conn_check.h"
#include "server/net/conn_stream.h"
#include "server/net/tcp_listener.h"
#include "server/net/tls_context.h"
#include "server/net/unread_bytes.h"
#include "server/service/message_api.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"

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

constexpr size_t kKeepBufferBytes = 256 * 1024;  // larger idle buffers are freed
constexpr std::chrono::seconds kLingerTime{2};   // after a protocol error frame
constexpr size_t kLingerBytes = 1 << 20;         // discarded at most while lingering

}  // namespace

struct BinaryServer::Impl {
  Impl(BinaryServerOptions options_, const Services& services)
      : options(std::move(options_)),
        dispatcher(services,
                   BinaryDispatchLimits{std::min(options.max_frame_bytes, proto::kMaxFrameSize),
                                        options.max_subscriptions}),
        auth(services.auth),
        metrics(services.metrics),
        placement(services.placement),
        unread(options.max_unread_bytes_per_peer) {}

  const BinaryServerOptions options;
  BinaryDispatcher dispatcher;
  const Authenticator* const auth;        // null: open
  RequestMetrics& metrics;                // outlives the server (Services)
  const PlacementApi* const placement;    // store groups; null without
  std::shared_ptr<TcpListener> listener;  // set once, by the constructor
  UnreadBytes unread;                     // answers written and not taken, per address
};

namespace {

// One connection: socket I/O, back-pressure and the push box; requests go
// to the dispatcher. Every member is touched only on the connection's
// strand, except strand_ (immutable).
//
// Accounting: a request is "unanswered" from the moment it is decoded until
// its response has been written: pending_ (at the allocator), then queued_
// (in out_), then writing_count_ (in wbuf_, being written). Their sum is
// capped at max_in_flight, which also bounds the output buffers.
class Session final : public ListenedSession,
                      public BinaryConnection,
                      public std::enable_shared_from_this<Session> {
 public:
  Session(ConnStream&& stream, std::shared_ptr<BinaryServer::Impl> server)
      : socket_(std::move(stream)),
        strand_(socket_.get_executor()),
        timer_(strand_),
        server_(std::move(server)),
        max_in_flight_(std::max<size_t>(1, server_->options.max_in_flight)),
        max_frame_(std::min(server_->options.max_frame_bytes, proto::kMaxFrameSize)),
        max_output_(std::max(server_->options.max_output_bytes, max_frame_)),
        idle_(server_->options.idle_timeout),
        unread_(server_->unread) {
    access() = IdentifyBy(server_->auth, {}, "binary", socket_.PeerAddress());
    unread_.set_peer(socket_.PeerIp());
  }

  ~Session() override {
    // No listener may run once the subscriptions are gone; drop them before
    // the push box (they reference it).
    subs_.clear();
  }

  // Never with `reject`: over-capacity connections are closed at once.
  // With TLS the handshake comes first; it must finish within the request
  // timeout, like a frame.
  void Start(bool /*reject*/) override {
    net::dispatch(strand_, [self = shared_from_this()] {
      error_code ec;  // plain TCP answers are sent inline, without blocking (SendNow)
      if (!self->socket_.is_tls()) self->socket_.socket().non_blocking(true, ec);
      if (ec) return self->Close();
      self->last_activity_ = SteadyClock::now();
      self->partial_ = self->socket_.is_tls();
      self->partial_since_ = self->last_activity_;
      self->ArmTimer(self->NextCheck(self->last_activity_, false));
      self->socket_.AsyncHandshake([self](error_code ec) {
        if (self->closed_) return;
        if (ec) {
          SEQD_LOG(kDebug) << "binary: TLS handshake failed: " << ec.message();
          return self->Close();
        }
        self->partial_ = false;
        self->StartRead();
      });
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
    MakeFrameReadRoom(in_, in_begin_, in_end_, max_frame_);
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
    processing_ = true;
    in_batch_ = true;
    while (in_begin_ < in_end_ && unanswered() < max_in_flight_ && !output_full()) {
      const std::string_view input(in_.data() + in_begin_, in_end_ - in_begin_);
      const proto::DecodeResult r = proto::DecodeFrame(input, max_frame_);
      if (r.state == proto::DecodeState::kNeedMore) {
        // A frame has begun: it must be whole within request_timeout.
        if (!partial_) {
          partial_ = true;
          partial_since_ = last_activity_;
        }
        break;
      }
      if (r.state == proto::DecodeState::kError) {
        ProtocolError(r.error, proto::DescribeDecodeError(input, max_frame_));
        break;
      }
      if (unread_.Over()) {  // its address does not read what it asked for
        ProtocolError(proto::Status::kResourceExhausted,
                      "too many answers unread from this address");
        break;
      }
      // The frame stays valid: nothing reuses the buffer until the loop ends.
      in_begin_ += r.consumed;
      partial_ = false;
      HandleFrame(r.frame);
      if (closing_ || stopping_) break;
    }
    server_->dispatcher.EndOfBatch(*this);  // a run gathered from these frames
    in_batch_ = false;
    if (pending_ == 0) self_keep_.reset();  // safe: our caller holds a reference
    if (in_begin_ == in_end_ && !reading_) {
      in_begin_ = in_end_ = 0;
      if (in_.size() > kKeepBufferBytes) std::vector<char>().swap(in_);
    }
    const bool capped = in_begin_ < in_end_ && (unanswered() >= max_in_flight_ || output_full());
    Flush();
    processing_ = false;
    // Sent at once, the answers made room: the frames left come first.
    if (capped && unanswered() < max_in_flight_ && !output_full()) return ResumeLater();
    StartRead();
  }

  // Posts ProcessInput (once): the rest of the input, then reading on.
  void ResumeLater() {
    if (resume_posted_ || closed_) return;
    resume_posted_ = true;
    net::post(strand_, [self = shared_from_this()] {
      self->resume_posted_ = false;
      if (!self->reading_) self->ProcessInput();
    });
  }

  // --- requests ------------------------------------------------------------

  void HandleFrame(const proto::FrameView& f) {
    if (f.is_response()) {
      return ProtocolError(proto::Status::kMalformedFrame,
                           "malformed frame: RESPONSE flag set on a request");
    }
    server_->dispatcher.Handle(f, *this);
  }

  // --- BinaryConnection (the dispatcher's side) ------------------------------

  std::string& out() override { return out_; }
  void Queued() override { ++queued_; }

  void Hold() override {
    // The session outlives every request in flight (see Released).
    if (pending_++ == 0 && !self_keep_) self_keep_ = shared_from_this();
  }

  // Any thread. Inline when already on the strand (the allocator's fast
  // path): checked here, since net::dispatch would copy the strand (two
  // atomic reference counts) per request even to run inline. A run's
  // answers (`run` true: `id` is the run) release one hold per request.
  void DeliverIds(uint32_t id, Result<IdBatch> r) override { OnStrand(id, std::move(r), false); }
  void DeliverRun(uint32_t run, Result<IdBatch> r) override { OnStrand(run, std::move(r), true); }
  bool batching() const override { return in_batch_; }
  void OnStrand(uint32_t id, Result<IdBatch> r, bool run) {
    if (strand_.running_in_this_thread()) return WriteIdsNow(id, r, run);
    net::post(strand_, [this, id, run, r = std::move(r)]() { WriteIdsNow(id, r, run, true); });
  }

  // On the strand.
  void WriteIdsNow(uint32_t id, const Result<IdBatch>& r, bool run, bool posted = false) {
    std::shared_ptr<Session> keep;
    for (size_t n = run ? runs().asks(id).size() : 1; n > 0; --n) {
      if (std::shared_ptr<Session> last = Released()) keep = std::move(last);
    }
    if (closed_ || closing_) {  // nobody to answer, or after the error frame
      if (run) runs().Release(id);
      return;
    }
    run ? server_->dispatcher.WriteRun(*this, id, r) : server_->dispatcher.WriteIds(*this, id, r);
    if (in_batch_) return;  // ProcessInput flushes once at the end
    if (!posted) return Flush();
    // Answers from other threads come in bursts (a reservation's parked
    // requests): one send, after those posted before the flush.
    if (std::exchange(flush_posted_, true)) return;
    net::post(strand_, [self = shared_from_this()] {
      self->flush_posted_ = false;
      self->Flush();
    });
  }

  void Deliver(std::function<void(BinaryConnection&)> write) override {
    net::dispatch(strand_, [this, write = std::move(write)]() mutable {
      std::shared_ptr<Session> keep = Released();
      if (closed_ || closing_) return;
      write(*this);
      PublishUnsent();
      if (!in_batch_) Flush();
    });
  }

  void CloseAfterAnswers() override { stopping_ = true; }
  SubscriptionMap& subscriptions() override { return subs_; }

  MessageListener PushListener() override {
    if (!push_) {
      push_ = std::make_shared<PushBox>(max_output_, max_frame_, Posted(&Session::DrainPush));
      PublishUnsent();
      // A tokens reload may take away what the subscriptions need.
      if (server_->auth && server_->auth->enabled()) {
        reload_watch_ = server_->auth->OnReload(Posted(&Session::RecheckSubscriptions));
      }
    }
    return [box = push_](const StoredMessage& m) { box->Push(m); };
  }

  // For other threads: runs `member` on the strand if the session still lives.
  std::function<void()> Posted(void (Session::*member)()) {
    return [weak = weak_from_this(), strand = strand_, member] {
      net::post(strand, [weak, member] {
        if (std::shared_ptr<Session> self = weak.lock()) ((*self).*member)();
      });
    };
  }

  // One held request answered. Inside a batch the caller holds a reference
  // and releases self_keep_ once at the end (saves a pair of atomic
  // operations per request); otherwise the returned reference may be the
  // last, released by the caller on return.
  std::shared_ptr<Session> Released() {
    std::shared_ptr<Session> keep;
    if (--pending_ == 0 && !in_batch_) keep = std::move(self_keep_);
    return keep;
  }

  // --- push ----------------------------------------------------------------

  void PublishUnsent() {
    if (push_) push_->SetUnsent(unsent());
  }

  void DrainPush() {
    bool dropped = false;
    std::string data = push_->Take(&dropped);
    if (closed_ || closing_) return;
    out_ += data;
    if (dropped) {
      // Destroyed outside the box's lock: a listener may be waiting for it.
      subs_.clear();
      push_->Reopen();
      SEQD_LOG(kDebug) << "binary: push backlog over " << max_output_
                       << " bytes: subscriptions dropped";
      proto::AppendPushDropped(out_, proto::Status::kTooLarge,
                               "push backlog over " + std::to_string(max_output_) +
                                   " bytes: subscriptions dropped; pull to re-sync");
    }
    PublishUnsent();
    Flush();
  }

  // After a tokens reload: subscriptions the token no longer allows end
  // with a PUSH_DROPPED.
  void RecheckSubscriptions() {
    if (closed_ || closing_) return;
    server_->dispatcher.RecheckSubscriptions(*this);
    PublishUnsent();
    Flush();
  }

  // Sends one error frame, then closes (after lingering).
  void ProtocolError(proto::Status status, std::string_view message) {
    server_->dispatcher.CountProtocolError(status);
    SEQD_LOG(kDebug) << "binary: closing connection: " << proto::StatusName(status) << ": "
                     << message;
    closing_ = true;
    proto::AppendProtocolError(out_, status, message);
  }

  // --- writing -------------------------------------------------------------

  void Flush() {
    if (closed_) return;
    if (writing_) return CountUnread();  // more answers behind a write not taken
    if (out_.empty()) return;
    if (server_->placement) AnnouncePlacement();
    if (!socket_.is_tls() && SendNow()) return;
    writing_ = true;
    out_.swap(wbuf_);  // wbuf_ was empty: out_ keeps its capacity for next time
    writing_count_ = queued_;
    queued_ = 0;
    PublishUnsent();
    CountUnread();
    write_started_ = SteadyClock::now();
    net::async_write(socket_, net::buffer(wbuf_),
                     [self = shared_from_this()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  // Store groups: on a connection that asked for them (PLACEMENT), the
  // answers about to go out are preceded by a PLACEMENT push when the
  // instance's version rose above the last one the connection was told
  // (one atomic load per write otherwise), so a client holding an answer
  // knows a version at least as new as the one the instance held when it
  // answered.
  void AnnouncePlacement() {
    if (!placement_pushes || closing_) return;
    const int64_t version = server_->placement->version();
    if (version <= placement_told) return;
    placement_told = version;
    std::string push;
    proto::AppendPlacementPush(push, version);
    out_.insert(0, push);
  }

  // Plain TCP: sends out_ as far as the socket takes it now, without
  // blocking (as RESP does: no write handler per flush). True if all of it
  // went (or the connection closed); else out_ holds the rest.
  bool SendNow() {
    error_code ec;
    const size_t n = socket_.socket().write_some(net::buffer(out_), ec);
    if (ec && ec != net::error::would_block && ec != net::error::try_again) {
      Close();  // the peer is gone
      return true;
    }
    if (n < out_.size()) {
      out_.erase(0, n);
      return false;
    }
    out_.clear();
    queued_ = 0;
    last_activity_ = SteadyClock::now();
    PublishUnsent();
    Written(/*in_handler=*/false);
    return true;
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    writing_count_ = 0;
    if (wbuf_.capacity() > kKeepBufferBytes) {
      std::string().swap(wbuf_);
    } else {
      wbuf_.clear();
    }
    CountUnread();
    if (closed_) return;
    if (ec) return Close();
    last_activity_ = SteadyClock::now();
    PublishUnsent();
    if (!out_.empty()) return Flush();  // what accumulated meanwhile: its write ends as this one
    Written(/*in_handler=*/true);
  }

  // The address's share of answers not read (server_->unread): all unsent
  // bytes while a write waits for the client, none otherwise.
  void CountUnread() { unread_.OweExactly(writing_ ? unsent() : 0); }

  // Everything queued so far is written: finish, or take more requests.
  // `in_handler`: called by a write's own handler, which may handle input.
  void Written(bool in_handler) {
    if (closing_) {
      if (!lingering_) Linger();  // the error frame is out
      return;
    }
    if (stopping_ || read_eof_) return MaybeFinish();
    if (reading_ || processing_) return;    // ProcessInput reads on itself
    if (in_handler) return ProcessInput();  // below the cap again: buffered frames, read on
    ResumeLater();
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
    socket_.ShutdownSend();
    const auto linger = idle_.count() > 0 ? std::min<SteadyClock::duration>(kLingerTime, idle_)
                                          : SteadyClock::duration(kLingerTime);
    ArmTimer(SteadyClock::now() + linger);
    if (!reading_) DoDiscard();
  }

  void DoDiscard() {
    if (in_.size() < kFrameMinReadSpace) in_.resize(kFrameMinReadSpace);
    reading_ = true;
    socket_.async_read_some(
        net::buffer(in_.data(), in_.size()),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    socket_.Close();  // aborts the read and write in flight
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

  // Checks the deadlines instead of re-arming on every request: a frame
  // begun must be whole within request_timeout (trickling does not extend
  // it), a write must be taken within write_timeout, and a connection with
  // nothing in flight closes after idle_timeout.
  void OnTimer(error_code ec) {
    if (ec || closed_) return;  // cancelled or re-armed
    if (lingering_) return Close();
    const auto now = SteadyClock::now();
    const auto& o = server_->options;
    if (writing_ && o.write_timeout.count() > 0 && now - write_started_ >= o.write_timeout) {
      SEQD_LOG(kDebug) << "binary: closing a connection that does not read its answers";
      server_->metrics.WriteTimedOut(Interface::kBinary);
      return Close();
    }
    if (partial_ && o.request_timeout.count() > 0 && now - partial_since_ >= o.request_timeout) {
      SEQD_LOG(kDebug) << "binary: closing a connection whose frame did not arrive in time";
      return Close();
    }
    const bool busy = unanswered() > 0 || !subs_.empty();
    if (idle_.count() > 0 && !busy && now - last_activity_ >= idle_) {
      SEQD_LOG(kDebug) << "binary: closing idle connection";
      return Close();
    }
    ArmTimer(NextCheck(now, busy));
  }

  // The next OnTimer (conn_check.h): frame and write deadlines exact.
  SteadyClock::time_point NextCheck(SteadyClock::time_point now, bool busy) const {
    const auto& o = server_->options;
    ConnCheckState state{now, last_activity_, busy, {}, {}};
    if (partial_) state.frame_since = partial_since_;
    if (writing_) state.write_since = write_started_;
    return NextConnCheck({idle_, o.request_timeout, o.write_timeout}, state);
  }

  ConnStream socket_;  // TCP, or TLS over it
  const Strand strand_;
  Timer timer_;
  std::shared_ptr<BinaryServer::Impl> server_;
  const size_t max_in_flight_;
  const size_t max_frame_;
  const size_t max_output_;
  const std::chrono::seconds idle_;
  std::shared_ptr<PushBox> push_;                             // made by the first SUBSCRIBE
  SubscriptionMap subs_;                                      // by conversation
  std::unique_ptr<Authenticator::ReloadWatch> reload_watch_;  // with the push box
  UnreadShare unread_;                                        // settled when destroyed

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
  SteadyClock::time_point partial_since_{};  // when the partial frame's bytes began
  SteadyClock::time_point write_started_{};  // of the write in flight
  size_t discarded_ = 0;
  bool partial_ = false;  // a frame has begun and is not whole yet

  bool reading_ = false;        // an async_read_some is in flight
  bool writing_ = false;        // an async_write is in flight (what SendNow could not send)
  bool in_batch_ = false;       // inside ProcessInput's loop: defer Flush
  bool flush_posted_ = false;   // a Flush is posted behind posted answers
  bool processing_ = false;     // inside ProcessInput, its Flush included
  bool resume_posted_ = false;  // ResumeLater's ProcessInput is queued
  bool read_eof_ = false;       // the client shut down its side
  bool stopping_ = false;       // draining: answer what is in flight, then close
  bool closing_ = false;        // protocol error: error frame queued, then close
  bool lingering_ = false;      // error frame written; discarding input until close
  bool closed_ = false;
};

}  // namespace

BinaryServer::BinaryServer(net::io_context& io, BinaryServerOptions options,
                           const Services& services)
    : impl_(std::make_shared<Impl>(std::move(options), services)) {
  impl_->listener =
      MakeTcpListener(io, AcceptOptions("binary", impl_->options, /*sessions_reject=*/false), impl_,
                      [](TcpListener::Socket socket, std::shared_ptr<Impl> impl) {
                        const auto& tls = impl->options.tls;
                        ConnStream stream(std::move(socket), tls ? tls->Current() : nullptr);
                        return std::make_shared<Session>(std::move(stream), std::move(impl));
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
